// 802.1Q tags: VLANDecap/VLANEncap (ANNO, ETHERTYPE, native VLAN 0
// untagged), VLANEncap with TCI and PCP, StripEtherVLANHeader with a
// native VLAN, EtherVLANEncap(ANNO, NATIVE_VLAN), SetVLANAnno,
// StoreEtherAddress; CheckARPHeader on ARP frames (good, short, bad
// lengths); EnsureEther on IP packets that lost their Ethernet header.
src :: FromDump(input.pcap, STOP true);
src -> c :: Classifier(12/0806, 12/8100, 12/0800, -);

c[0] -> ca :: CheckARPHeader(14) -> ToDump(output_arp.pcap);
ca[1] -> ToDump(output_badarp.pcap);

c[1] -> vd :: VLANDecap -> ve :: VLANEncap(ANNO, ETHERTYPE 0x88a8) -> ToDump(output_requeued.pcap);

c[2] -> t :: Tee(3);
t[0] -> VLANEncap(7, 2) -> ToDump(output_tagged.pcap);
t[1] -> StripEtherVLANHeader(3)
  -> evlan :: EtherVLANEncap(0x0800, 0:1:2:3:4:5, 0:a:b:c:d:e, ANNO, NATIVE_VLAN 3)
  -> StoreEtherAddress(1:2:3:4:5:6, src) -> ToDump(output_native.pcap);
t[2] -> Strip(14) -> MarkIPHeader -> SetVLANAnno(VLAN_ID 9, VLAN_PCP 5)
  -> EtherVLANEncap(0x0800, 0:1:2:3:4:5, 0:a:b:c:d:e, ANNO)
  -> ToDump(output_sva.pcap);

c[3] -> Discard;

DriverManager(wait, print ca.drops, print ve.config, print ve.vlan_tci, print evlan.config,
  print evlan.vlan_tci);
