// UDPIP6Encap: new IPv6 (hop limit 255, class and flow label 0) and UDP
// headers in front of each packet, the UDP checksum over the IPv6
// pseudo-header always computed; DST_ANNO from GetIP6Address; then EtherEncap.
src :: FromDump(input.pcap, STOP true);
c :: Classifier(12/86dd, -);
src -> c;
c[0] -> t :: Tee(2);
t[0] -> Strip(14) -> UDPIP6Encap(2001:db8::1, 1234, 2001:db8::2, 4321)
     -> EtherEncap(0x86DD, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_fixed.pcap);
t[1] -> Strip(14) -> GetIP6Address(24) -> UDPIP6Encap(2001:db8::1, 53, DST_ANNO, 65535)
     -> EtherEncap(0x86DD, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_dst_anno.pcap);
c[1] -> Strip(14) -> UDPIP6Encap(fe80::1, 7, fe80::2, 9)
     -> EtherEncap(0x86DD, 02:00:00:00:00:0c, 02:00:00:00:00:0d) -> ToDump(output_other.pcap);
