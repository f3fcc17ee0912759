// PrioSched, RoundRobinSched and DRRSched pulling from Queues that the trace
// fills completely before anything is pulled: the Unqueues start inactive
// and are switched on once the trace has ended. Full queues drop (tail).
src :: FromDump(input.pcap, STOP true);
src -> t :: Tee(3);

// Strict priority: TCP first, then UDP, then everything else.
t[0] -> pc :: Classifier(23/11, 23/06, -);
pc[0] -> pq0 :: Queue(6);
pc[1] -> pq1 :: Queue(5);
pc[2] -> pq2 :: Queue(20);
pq1 -> [0]ps :: PrioSched;
pq0 -> [1]ps;
pq2 -> [2]ps;
ps -> pu :: Unqueue(ACTIVE false) -> ToDump(output_prio.pcap);

// Round robin by source host, pulled three at a time.
t[1] -> MarkIPHeader(14) -> rc :: IPClassifier(src host 10.0.0.1, src host 10.0.0.2, -);
rc[0] -> rq0 :: Queue(20);
rc[1] -> rq1 :: Queue(4);
rc[2] -> rq2 :: Queue(20);
rq0 -> [0]rr :: RoundRobinSched;
rq1 -> [1]rr;
rq2 -> [2]rr;
rr -> ru :: Unqueue(3, ACTIVE false) -> ToDump(output_rr.pcap);

// Deficit round robin by protocol with a quantum smaller than most packets.
t[2] -> MarkIPHeader(14) -> dc :: IPClassifier(udp, tcp, -);
dc[0] -> dq0 :: Queue(20);
dc[1] -> dq1 :: Queue(20);
dc[2] -> dq2 :: Queue(3);
dq0 -> [0]drr :: DRRSched(QUANTUM 200);
dq1 -> [1]drr;
dq2 -> [2]drr;
drr -> du :: Unqueue(BURST 2, ACTIVE false) -> ToDump(output_drr.pcap);

DriverManager(wait,
  print pq0.length, print pq1.length, print pq2.length,
  print rq0.length, print rq1.length, print rq2.length,
  print dq0.length, print dq1.length, print dq2.length,
  write pu.active true, write ru.active true, write du.active true,
  wait 20ms,
  print pq0.drops, print pq1.drops, print pq2.drops,
  print rq0.drops, print rq1.drops, print rq2.drops,
  print dq0.drops, print dq1.drops, print dq2.drops,
  print pu.count, print ru.count, print du.count,
  print pq2.length, print rq0.length, print dq1.length,
  stop);
