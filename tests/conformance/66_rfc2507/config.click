// RFC2507Comp -> RFC2507Decomp over TCP flows in both directions (sequence, ack,
// window, PSH and IP ID changes; sequence jumps and window decreases sent as full
// headers; SYN, FIN and UDP sent uncompressed; more flows than contexts), and
// RFC2507Decomp alone on hand-made compressed frames (ethertype 0x88b5): full
// header, deltas in the one- and three-byte forms, URG set and cleared, IP ID
// carried or incremented, and frames it drops (one byte, unknown type, CID 15).
src :: FromDump(input.pcap, STOP true);
c :: Classifier(12/0800, 12/88b5);
src -> c;
c[0] -> Strip(14) -> RFC2507Comp -> RFC2507Decomp -> SetTimestamp(1600000000.000000)
     -> EtherEncap(0x0800, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_flows.pcap);
c[1] -> Strip(14) -> RFC2507Decomp -> SetTimestamp(1600000000.000000)
     -> EtherEncap(0x0800, 00:00:00:00:00:0a, 00:00:00:00:00:0b) -> ToDump(output_hand.pcap);
