// ICMPRewriter with an IPRewriter in MAPS (port offset 0): ICMP errors about NATed TCP and
// UDP flows are translated in both directions. Errors from the outside about packets
// that left as 10.0.0.1:PORT match the flows' reply entries and go to output 1 (the
// rewriter's reply output); errors from inside hosts about packets they received match
// forward entries and go to output 0. Errors about unknown flows, other protocols (ICMP,
// DCCP, a TCP quote with a UDP flow's ports), fragments, and non-errors are dropped.
src :: FromDump(input.pcap, STOP true);
rw :: IPRewriter(pattern 10.0.0.1 1024-65535# - - 0 1, drop);
ir :: ICMPRewriter(rw:0);
dir :: IPClassifier(src net 192.168.0.0/16 and (tcp or udp), dst host 10.0.0.1 and (tcp or udp),
                    icmp, -);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]rw;
dir[1] -> [1]rw;
dir[2] -> ir;
dir[3] -> Discard;
rw[0] -> Unstrip(14) -> ToDump(output_out.pcap);
rw[1] -> Unstrip(14) -> ToDump(output_in.pcap);
ir[0] -> Unstrip(14) -> ToDump(output_icmp_out.pcap);
ir[1] -> Unstrip(14) -> ToDump(output_icmp_in.pcap);
DriverManager(wait, print rw.nmappings);
