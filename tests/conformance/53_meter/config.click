// Meter and BandwidthMeter: classification while the measured rate stays
// under the first threshold, several outputs, bandwidth units, and the
// `meters` handler's fixed-point text (no separators between rates).
src :: FromDump(input.pcap, STOP true);
src -> t :: Tee(4);
t[0] -> m :: Meter(1000000);
m[0] -> ToDump(output_m_0.pcap);
m[1] -> ToDump(output_m_1.pcap);
t[1] -> bm :: BandwidthMeter(3MBps, 4000000Bps);
bm[0] -> ToDump(output_bm_0.pcap);
bm[1] -> ToDump(output_bm_1.pcap);
bm[2] -> ToDump(output_bm_2.pcap);
t[2] -> m3 :: Meter(500, 1000, 2000) => Discard, Discard, Discard, Discard;
t[3] -> bm2 :: BandwidthMeter(1kbps, 12kbps) => Discard, Discard, Discard;
DriverManager(wait, print m.meters, print bm.meters, print m3.meters, print bm2.meters);
