// IPMirror: addresses swapped; TCP/UDP ports (and TCP sequence/acknowledgement
// numbers) of first fragments with 8 transport bytes; checksums untouched; the
// destination annotation (exposed by StoreIPAddress(0) over the Ethernet
// destination) set unless DST_ANNO false. FixIPSrc rewrites the source (and the
// header checksum) only of packets whose fix-IP-source annotation ICMPError set,
// and clears the annotation.
src :: FromDump(input.pcap, STOP true);
t :: Tee(4);
src -> Classifier(12/0800) -> Strip(14) -> MarkIPHeader -> t;
t[0] -> IPMirror -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02)
     -> StoreIPAddress(0) -> ToDump(output_mirror.pcap);
t[1] -> SetIPAddress(7.7.7.7) -> IPMirror(false)
     -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02)
     -> StoreIPAddress(0) -> ToDump(output_mirror_noanno.pcap);
t[2] -> ICMPError(1.1.1.1, unreachable, port) -> FixIPSrc(2.2.2.2) -> IPMirror
     -> FixIPSrc(3.3.3.3) -> SetTimestamp(1600000000.000000)
     -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> ToDump(output_fix.pcap);
t[3] -> FixIPSrc(4.4.4.4) -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02)
     -> ToDump(output_nofix.pcap);
