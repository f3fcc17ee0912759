// IPRewriterPatterns shared by two rewriters: to_a (sequential ports 2000-2009 on
// 10.0.0.1) is one pattern object, so TCPRewriter and UDPRewriter draw from one
// counter, while each checks free ports in its own table; to_b keeps the packet's
// own port when it is in range. TCPRewriter: pattern, drop, keep, pass inputs; it
// only maps TCP. UDPRewriter maps UDP and TCP in one table.
IPRewriterPatterns(to_a 10.0.0.1 2000-2009# - -,
                   to_b 10.0.0.2 3000-3999 - -);
src :: FromDump(input.pcap, STOP true);
dir :: IPClassifier(src net 192.168.1.0/24 and tcp,
                    src net 192.168.1.0/24,
                    src net 192.168.2.0/24 and tcp,
                    src net 192.168.2.0/24,
                    src net 192.168.3.0/24,
                    src net 192.168.4.0/24,
                    dst host 10.0.0.1 and tcp,
                    dst host 10.0.0.1,
                    dst host 10.0.0.2,
                    dst net 192.168.2.0/24,
                    -);
tr :: TCPRewriter(pattern to_a 0 1, drop, keep 2 3, pass 4);
ur :: UDPRewriter(pattern to_a 0 1, drop, pattern to_b 2 3);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]tr;
dir[1] -> [0]ur;
dir[2] -> [2]tr;
dir[3] -> [2]ur;
dir[4] -> [3]tr;
dir[5] -> [2]ur;
dir[6] -> [1]tr;
dir[7] -> [1]ur;
dir[8] -> [1]ur;
dir[9] -> [1]tr;
dir[10] -> Discard;
tr[0] -> Unstrip(14) -> ToDump(output_tr0.pcap);
tr[1] -> Unstrip(14) -> ToDump(output_tr1.pcap);
tr[2] -> Unstrip(14) -> ToDump(output_tr2.pcap);
tr[3] -> Unstrip(14) -> ToDump(output_tr3.pcap);
tr[4] -> Unstrip(14) -> ToDump(output_tr4.pcap);
ur[0] -> Unstrip(14) -> ToDump(output_ur0.pcap);
ur[1] -> Unstrip(14) -> ToDump(output_ur1.pcap);
ur[2] -> Unstrip(14) -> ToDump(output_ur2.pcap);
ur[3] -> Unstrip(14) -> ToDump(output_ur3.pcap);
DriverManager(wait, print tr.nmappings, print ur.nmappings,
              print tr.mapping_failures, print ur.mapping_failures);
