// RatedUnqueue (BURST_SIZE) and BandwidthRatedUnqueue (BURST_BYTES, the
// 131072-byte threshold) pulling from Queues; `rate` handlers. After the
// trace ends the driver waits 10 ms; the next token is further away.
src :: FromDump(input.pcap, STOP true);
src -> t :: Tee(2);
t[0] -> q1 :: Queue(100) -> ru :: RatedUnqueue(1, BURST_SIZE 7) -> ToDump(output_ru.pcap);
t[1] -> q2 :: Queue(100) -> bru :: BandwidthRatedUnqueue(16kbps, BURST_BYTES 1100) -> ToDump(output_bru.pcap);
DriverManager(pause, wait 10ms, print q1.length, print q2.length, print ru.rate, print bru.rate, stop);
