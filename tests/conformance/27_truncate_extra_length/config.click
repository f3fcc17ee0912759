// Truncate with and without EXTRA_LENGTH; FromDump's extra length for snapped records;
// ToDump's SNAPLEN; MarkIPHeader / StripIPHeader / UnstripIPHeader.
src :: FromDump(input.pcap, STOP true);
t :: Tee(6);
src -> t;
t[0] -> Truncate(60) -> ToDump(output_trunc60.pcap);
t[1] -> Truncate(42, EXTRA_LENGTH false) -> ToDump(output_trunc42_noextra.pcap);
t[2] -> ToDump(output_passthrough.pcap);
t[4] -> ToDump(output_snap64.pcap, SNAPLEN 64);
t[5] -> ToDump(output_snap0.pcap, SNAPLEN 0);   // 0 means no limit (header says 4294967295)
t[3] -> Classifier(12/0800) -> MarkIPHeader(14) -> StripIPHeader -> Truncate(8) -> UnstripIPHeader
     -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> ToDump(output_l4_head.pcap);
