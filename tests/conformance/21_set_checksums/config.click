// SetTCPChecksum / SetUDPChecksum / SetIPChecksum over packets with corrupted checksums,
// IP options (incl. source routes: pseudo-header uses the final hop), odd lengths,
// fragments and bad lengths.
src :: FromDump(input.pcap, STOP true);
cl :: Classifier(12/0800 23/06, 12/0800 23/11, 12/0800, -);
src -> cl;
cl[0] -> MarkIPHeader(14) -> SetTCPChecksum -> sit :: SetIPChecksum -> ToDump(output_tcp.pcap);
cl[1] -> MarkIPHeader(14) -> suc :: SetUDPChecksum -> siu :: SetIPChecksum -> ToDump(output_udp.pcap);
suc[1] -> ToDump(output_udp_unchanged.pcap);
cl[2] -> Strip(14) -> sio :: SetIPChecksum -> Unstrip(14) -> ToDump(output_other_ip.pcap);
cl[3] -> Discard;
DriverManager(wait, print sit.drops, print siu.drops, print sio.drops);
