// IPGWOptions: Record Route gets MYADDR; Timestamp flag 3 only for our addresses
// (MYADDR or OTHERADDRS); full timestamp options count overflows; bad lengths,
// pointers, flags and overflow counts go to output 1 with the parameter-problem
// annotation, which ICMPError(parameterproblem) reports as its pointer; the header
// checksum is recomputed only when a RR/TS option was seen. (Timestamps carrying
// the time of day are not used: the reference reads the real clock.)
src :: FromDump(input.pcap, STOP true);
src -> Classifier(12/0800) -> Strip(14) -> MarkIPHeader
    -> gw :: IPGWOptions(192.168.1.1, 10.1.1.1 10.2.2.2);
gw -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> ToDump(output_ok.pcap);
gw[1] -> t :: Tee(2);
t[0] -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:03) -> ToDump(output_bad.pcap);
t[1] -> ICMPError(192.168.1.1, parameterproblem) -> SetTimestamp(1600000000.000000)
     -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:04) -> ToDump(output_paramprob.pcap);
DriverManager(wait, print gw.drops);
