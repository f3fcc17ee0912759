// BandwidthRatedSplitter: the 131072-byte threshold rule with BURST_BYTES,
// BURST_DURATION and the default bucket; bandwidth units; `rate`/`config`.
src :: FromDump(input.pcap, STOP true);
src -> t :: Tee(3);
t[0] -> b1 :: BandwidthRatedSplitter(16kbps, BURST_BYTES 850);
b1[0] -> c1 :: Counter -> ToDump(output_b1_0.pcap);
b1[1] -> ToDump(output_b1_1.pcap);
t[1] -> b2 :: BandwidthRatedSplitter(RATE 2000Bps, BURST_DURATION 1200ms) -> c2 :: Counter -> ToDump(output_b2_0.pcap);
t[2] -> b3 :: BandwidthRatedSplitter(1Gbps);
b3[0] -> ToDump(output_b3_0.pcap);
b3[1] -> ToDump(output_b3_1.pcap);
DriverManager(wait, print b1.rate, print b2.rate, print b3.rate, print c1.count, print c2.count);
