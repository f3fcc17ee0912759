// IPAddrPairRewriter: NAT per (source, destination) pair. Inside packets to
// 198.51.100.0/24 get a source address from 10.0.0.1-10.0.0.2 (sequential; one address
// serves several destinations); other inside packets keep their source and go to
// 172.16.0.9; replies come back on output 1, other outside packets pass on output 2.
src :: FromDump(input.pcap, STOP true);
dir :: IPClassifier(src net 192.168.0.0/16 and dst net 198.51.100.0/24,
                    src net 192.168.0.0/16, -);
rw :: IPAddrPairRewriter(pattern 10.0.0.1-10.0.0.2# - 0 1, pass 2, pattern - 172.16.0.9 0 1,
                         GUARANTEE 0, TIMEOUT 600);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]rw;
dir[1] -> [2]rw;
dir[2] -> [1]rw;
rw[0] -> Unstrip(14) -> ToDump(output_out.pcap);
rw[1] -> Unstrip(14) -> ToDump(output_in.pcap);
rw[2] -> Unstrip(14) -> ToDump(output_pass.pcap);
DriverManager(wait, print rw.table_size, print rw.size, print rw.mapping_failures,
              print rw.patterns, print rw.table);
