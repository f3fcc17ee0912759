// IPEncap: IPv4 header pushed in front of whole IP packets (ID counts from 0 per element,
// default TTL 250), TOS / DSCP / ECT / CE / TTL / DF keywords, named protocols, DST_ANNO.
src :: FromDump(input.pcap, STOP true);
t :: Tee(4);
src -> Classifier(12/0800) -> Strip(14) -> t;
t[0] -> IPEncap(4, 18.26.4.24, 140.247.60.147)
     -> EtherEncap(0x0800, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_ipip.pcap);
t[1] -> IPEncap(gre, 10.0.0.1, 10.0.0.2, TOS 184, TTL 64, DF true)
     -> EtherEncap(0x0800, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_gre_df.pcap);
t[2] -> GetIPAddress(16) -> IPEncap(ipip, 192.0.2.1, DST_ANNO, DSCP 46, ECT true, TTL 1)
     -> EtherEncap(0x0800, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_dst_anno.pcap);
t[3] -> IPEncap(253, 0.0.0.0, 255.255.255.255, CE true, DSCP 10)
     -> EtherEncap(0x86dd, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_ce.pcap);
