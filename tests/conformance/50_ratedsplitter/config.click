// RatedSplitter: BURST_SIZE, BURST_DURATION, the default 20 ms bucket, one
// and two outputs; `rate`/`config` handlers. Rates are low enough that no
// token is earned during the run, so the split does not depend on timing.
src :: FromDump(input.pcap, STOP true);
src -> t :: Tee(3);
t[0] -> rs1 :: RatedSplitter(1, BURST_SIZE 5);
rs1[0] -> ToDump(output_rs1_0.pcap);
rs1[1] -> ToDump(output_rs1_1.pcap);
t[1] -> rs2 :: RatedSplitter(RATE 1, BURST_DURATION 7s) -> c2 :: Counter -> ToDump(output_rs2_0.pcap);
t[2] -> rs3 :: RatedSplitter(2000);
rs3[0] -> ToDump(output_rs3_0.pcap);
rs3[1] -> ToDump(output_rs3_1.pcap);
DriverManager(wait, print rs1.rate, print rs2.rate, print rs3.rate, print c2.count);
