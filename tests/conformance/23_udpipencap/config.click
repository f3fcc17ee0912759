// UDPIPEncap: new IPv4+UDP headers (ID counts from 0 per element, TTL 250, TOS 0, no DF),
// UDP checksum on/off, DST_ANNO taken from GetIPAddress; then EtherEncap.
src :: FromDump(input.pcap, STOP true);
t :: Tee(3);
src -> Classifier(12/0800) -> t;
t[0] -> Strip(14) -> UDPIPEncap(10.1.1.1, 1234, 10.2.2.2, 4321, CHECKSUM true)
     -> EtherEncap(0x0800, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_csum.pcap);
t[1] -> Strip(14) -> UDPIPEncap(192.168.100.1, 53, 192.168.200.2, 65535, false)
     -> EtherEncap(0x0800, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_nocsum.pcap);
t[2] -> GetIPAddress(30) -> Strip(14) -> UDPIPEncap(172.16.0.1, 5000, DST_ANNO, 6000, CHECKSUM true)
     -> EtherEncap(0x0800, 02:02:02:02:02:02, 04:04:04:04:04:04) -> ToDump(output_dst_anno.pcap);
