// Click configuration equivalent to FlowPolicer(1, 3, KEY src) on this trace
// (used once to cross-check expected_p1_*.pcap; not run by the test).
src :: FromDump(input.pcap, STOP true);
src -> MarkIPHeader(14) -> c :: IPClassifier(src host 10.0.4.1, src host 10.0.4.2, src host 10.0.4.3, -);
ok :: ToDump(output_p1_0.pcap);
over :: ToDump(output_p1_1.pcap);
c[0] -> r1 :: RatedSplitter(1, BURST_SIZE 3);
c[1] -> r2 :: RatedSplitter(1, BURST_SIZE 3);
c[2] -> r3 :: RatedSplitter(1, BURST_SIZE 3);
c[3] -> ok;
r1[0] -> ok; r2[0] -> ok; r3[0] -> ok;
r1[1] -> over; r2[1] -> over; r3[1] -> over;
