// RoundRobinIPMapper in an IPRewriter input spec: new inside flows take the three
// patterns in turn (source NAPT to 10.0.0.1, source NAPT to 10.0.0.2 with a 3-port
// range, destination NAT to 172.16.0.5:8080 on outputs 2/3); a pattern that has no
// free port passes the flow to the next one. Replies come back on input 1.
src :: FromDump(input.pcap, STOP true);
dir :: IPClassifier(src net 192.168.0.0/16, -);
rr :: RoundRobinIPMapper(10.0.0.1 1024-65535# - - 0 1,
                         10.0.0.2 5000-5002# - - 0 1,
                         - - 172.16.0.5 8080 2 3);
rw :: IPRewriter(rr, drop);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]rw;
dir[1] -> [1]rw;
rw[0] -> Unstrip(14) -> ToDump(output_snat.pcap);
rw[1] -> Unstrip(14) -> ToDump(output_snat_reply.pcap);
rw[2] -> Unstrip(14) -> ToDump(output_dnat.pcap);
rw[3] -> Unstrip(14) -> ToDump(output_dnat_reply.pcap);
DriverManager(wait, print rw.nmappings, print rw.mapping_failures, print rw.size);
