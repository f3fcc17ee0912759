// CheckTCPHeader / CheckUDPHeader / CheckICMPHeader: bad packets to output 1, or dropped
// when there is one output; drops and drop_details handlers.
src :: FromDump(input.pcap, STOP true);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> ic :: IPClassifier(tcp, udp, icmp, -);
ic[0] -> ct :: CheckTCPHeader(DETAILS true) -> Unstrip(14) -> ToDump(output_tcp_ok.pcap);
ct[1] -> Unstrip(14) -> ToDump(output_tcp_bad.pcap);
ic[1] -> cu :: CheckUDPHeader(DETAILS true) -> Unstrip(14) -> ToDump(output_udp_ok.pcap);
cu[1] -> Unstrip(14) -> ToDump(output_udp_bad.pcap);
ic[2] -> ci :: CheckICMPHeader -> Unstrip(14) -> ToDump(output_icmp_ok.pcap);
ci[1] -> Unstrip(14) -> ToDump(output_icmp_bad.pcap);
ic[3] -> t :: Tee(3);
t[0] -> nt :: CheckTCPHeader -> Discard;
t[1] -> nu :: CheckUDPHeader -> Discard;
t[2] -> ni :: CheckICMPHeader -> Discard;
DriverManager(wait, print ct.drops, print ct.drop_details, print cu.drops, print cu.drop_details,
              print ci.drops, print nt.drops, print nu.drops, print ni.drops);
