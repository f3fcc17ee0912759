// RED in push position in front of Queues that nothing drains while the
// trace plays (the Unqueues start inactive), with thresholds that leave no
// room for random drops: MIN_THRESH = MAX_THRESH with MAX_P 1 or GENTLE
// false (accept up to the threshold, drop above it), or MAX_P 0 with
// GENTLE false (no drop up to MAX_THRESH). The average is Click's
// fixed-point EWMA (STABILITY 4 and 2) or the instant length (STABILITY 0).
src :: FromDump(input.pcap, STOP true);
src -> t :: Tee(3);

t[0] -> r1 :: RED(8, 8, 1, QUEUES q1) -> q1 :: Queue(100)
  -> u1 :: Unqueue(ACTIVE false) -> ToDump(output_q1.pcap);

t[1] -> r2 :: RED(2, 6, 0, STABILITY 0, GENTLE false, QUEUES q2) -> q2 :: Queue(100)
  -> u2 :: Unqueue(ACTIVE false) -> ToDump(output_q2.pcap);
r2[1] -> ToDump(output_marked.pcap);

// One RED watching the summed length of two queues.
t[2] -> r3 :: RED(5, 5, 0.02, STABILITY 2, GENTLE false, QUEUES q3 q4)
  -> c :: Classifier(23/06, -);
c[0] -> q3 :: Queue(100);
c[1] -> q4 :: Queue(100);
q3 -> [0]ps :: PrioSched;
q4 -> [1]ps;
ps -> u3 :: Unqueue(ACTIVE false) -> ToDump(output_q34.pcap);

DriverManager(wait,
  print r1.drops, print q1.length, print r1.avg_queue_size, print r1.stats,
  print r1.queues,
  print r2.drops, print q2.length, print r2.avg_queue_size,
  print r3.drops, print q3.length, print q4.length, print r3.avg_queue_size,
  print r3.queues, print r3.max_p, print r3.min_thresh, print r3.max_thresh,
  write u1.active true, write u2.active true, write u3.active true,
  wait 20ms,
  print q1.length, print q1.drops, print q2.length, print q3.length, print q4.length,
  print u1.count, print u2.count, print u3.count, print r1.drops,
  stop);
