// FlowPolicer (pronto's own): per-source, per-5-tuple and per-destination
// token buckets in packets and in bytes (IP length), two outputs and one
// (drops), a non-IP packet passing unpoliced; counters and `flows`.
src :: FromDump(input.pcap, STOP true);
src -> MarkIPHeader(14) -> t :: Tee(3);
t[0] -> p1 :: FlowPolicer(1, 3, KEY src);
p1[0] -> ToDump(output_p1_0.pcap);
p1[1] -> ToDump(output_p1_1.pcap);
t[1] -> p2 :: FlowPolicer(8bps, 200, KEY flow) -> ToDump(output_p2_0.pcap);
t[2] -> p3 :: FlowPolicer(RATE 1, BURST 2, KEY dst, CAPACITY 16, TIMEOUT 10s);
p3[0] -> ToDump(output_p3_0.pcap);
p3[1] -> ToDump(output_p3_1.pcap);
DriverManager(wait, print p1.conform, print p1.exceed, print p1.flows,
              print p2.conform, print p2.drops, print p2.flows, print p3.flows,
              print p3.nonip, print p1.rate, print p2.rate);
