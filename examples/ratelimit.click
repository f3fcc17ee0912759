// A subscriber edge: a per-subscriber rate policer, strict priority for
// voice over bulk traffic, and an egress shaper on the uplink.
//
//   cargo run --release -- run --simtime examples/ratelimit.click
//   cargo run --release -- run examples/ratelimit.click OUT=/tmp/uplink.pcap
//
// Replays the bundled trace at its own pace (FromDump TIMING), so the rates
// mean something; with --simtime the run takes no wall-clock time and the
// counts are exact. Each subscriber (source address) may send 100 packets/s
// with bursts of 10; excess is dropped. Voice (RTP, UDP port 5004) and bulk
// traffic wait in separate queues; PrioSched always serves voice first, and
// BandwidthRatedUnqueue drains the uplink at 400 kbps. What leaves is written
// to $OUT and counted per class.

define($TRACE examples/ratelimit.pcap, $OUT /tmp/pronto-ratelimit-out.pcap);

src :: FromDump($TRACE, TIMING true, STOP true);
police :: FlowPolicer(100, 10, KEY src);
cls :: IPClassifier(udp dst port 5004, -);
vq :: Queue(50); bq :: Queue(20);
sched :: PrioSched;
uplink :: BandwidthRatedUnqueue(400kbps);
outcls :: IPClassifier(udp dst port 5004, -);
voice_in :: Counter; bulk_in :: Counter; voice_out :: Counter; bulk_out :: Counter;
out :: ToDump($OUT);

src -> MarkIPHeader(14) -> police;
police[1] -> Discard;
police[0] -> cls;
cls[0] -> voice_in -> vq -> [0] sched;
cls[1] -> bulk_in -> bq -> [1] sched;
sched -> uplink -> outcls;
outcls[0] -> voice_out -> out;
outcls[1] -> bulk_out -> out;

// After the trace ends, give the queues a second to drain.
DriverManager(pause, wait 1s,
  print "read          " $(src.count) "packets",
  print "policed       " $(police.exceed) "packets from" $(police.flows) "subscribers",
  print "voice  in/out " $(voice_in.count) $(voice_out.count) "queue drops" $(vq.drops),
  print "bulk   in/out " $(bulk_in.count) $(bulk_out.count) "queue drops" $(bq.drops),
  print "uplink        " $(add $(voice_out.byte_count) $(bulk_out.byte_count)) "bytes ->" $OUT,
  stop);
