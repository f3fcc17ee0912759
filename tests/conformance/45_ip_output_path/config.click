// A router's output path, as Click's IP router configurations build it:
// HostEtherFilter sets packet types, DropBroadcasts drops link broadcasts and
// multicasts, IPGWOptions fills in Record Route, FixIPSrc leaves forwarded packets
// alone, DecIPTTL, then IPFragmenter(300) whose DF packets get an ICMP needfrag
// error (PMTU 300) from ICMPError. Record Route is not copied into later fragments.
src :: FromDump(input.pcap, STOP true);
src -> HostEtherFilter(02:00:00:00:00:02) -> Classifier(12/0800) -> Strip(14) -> MarkIPHeader
    -> db :: DropBroadcasts -> gw :: IPGWOptions(10.0.0.1) -> FixIPSrc(10.0.0.1)
    -> dt :: DecIPTTL -> fr :: IPFragmenter(300)
    -> EtherEncap(0x0800, 02:00:00:00:00:02, 02:00:00:00:00:09) -> ToDump(output_out.pcap);
gw[1] -> EtherEncap(0x0800, 02:00:00:00:00:02, 02:00:00:00:00:0a) -> ToDump(output_badopt.pcap);
dt[1] -> EtherEncap(0x0800, 02:00:00:00:00:02, 02:00:00:00:00:0b) -> ToDump(output_expired.pcap);
fr[1] -> ICMPError(10.0.0.1, unreachable, needfrag, PMTU 300) -> FixIPSrc(10.0.0.2)
      -> SetTimestamp(1600000000.000000)
      -> EtherEncap(0x0800, 02:00:00:00:00:02, 02:00:00:00:00:01) -> ToDump(output_needfrag.pcap);
DriverManager(wait, print db.drops, print gw.drops, print dt.drops, print fr.fragments,
              print fr.drops);
