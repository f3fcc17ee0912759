// IPv4/IPv6 translation and SRv6: ProtocolTranslator46 (IPv4-mapped and a /56 RFC 6052
// prefix), ProtocolTranslator64, IP6SREncap (insertion and H.Encaps), IP6SRProcess,
// IP6SRDecap, AddressTranslator (dynamic address and port mapping). Expected outputs computed by make.py with scapy.
src :: FromDump(input.pcap, STOP true);
c :: Classifier(12/0800, 12/86dd);
src -> c;
c[0] -> Strip(14) -> t4 :: Tee(3);
t4[0] -> pt46 :: ProtocolTranslator46 -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_46.pcap);
t4[1] -> pt46p :: ProtocolTranslator46(PREFIX 2001:db8:122:300::/56) -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_46p.pcap);
t4[2] -> h :: IP6SREncap(2001:db8:e::1, SRC 2001:db8::ff) -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_hencap.pcap);
c[1] -> Strip(14) -> s :: Classifier(6/2b, -);
s[0] -> p :: IP6SRProcess;
p[0] -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_end.pcap);
p[1] -> d :: IP6SRDecap -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_decap.pcap);
s[1] -> t6 :: Tee(3);
t6[0] -> pt64 :: ProtocolTranslator64 -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_64.pcap);
t6[1] -> e :: IP6SREncap(2001:db8:a::1, 2001:db8:b::1) -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_insert.pcap);
t6[2] -> at :: AddressTranslator(0, true, true, false, ::ffff:10.0.0.9 5000 5004) -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_at.pcap);
Idle -> [1]at[1] -> Discard;
DriverManager(wait, print pt46.drops, print pt46p.drops, print h.drops, print pt64.drops, print e.drops, print p.drops, print d.drops, print at.drops, print at.mapping_failures, print at.mappings);
