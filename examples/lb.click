// A layer-4 load balancer: clients connect to the virtual service
// 192.0.2.10:80; each new connection goes to one of four backends chosen by
// Maglev consistent hashing (destination NAT), and the backends' answers
// are translated back so that clients see the VIP as their source.
//
//   cargo run --release -- run examples/lb.click
//   cargo run --release -- run examples/lb.click OUT=/tmp/lb.pcap
//
// The bundled trace has two phases, one second apart. After the first, the
// operator drains backend web3 through the mapper's write handler: it gets
// no new connections, while its existing ones (and everyone else's) keep
// their backend, because the rewriter's flow table holds them. Then the
// second phase is replayed: the old connections close, new clients arrive.
// What leaves the balancer is written to $OUT; per-backend counts are
// printed after each phase.

define($TRACE examples/lb.pcap, $OUT /tmp/pronto-lb-out.pcap);

// The same trace read twice: up to the gap between the phases, then after it.
phase1 :: FromDump($TRACE, STOP true, END_AFTER 1.5s);
phase2 :: FromDump($TRACE, STOP true, START_AFTER 1.5s, ACTIVE false);

mg :: MaglevIPMapper(web1 - - 10.1.0.1 80 0 1,
                     web2 - - 10.1.0.2 80 0 1,
                     web3 - - 10.1.0.3 80 0 1,
                     web4 - - 10.1.0.4 80 0 1);
// Input 0: connections to the VIP (new ones through the mapper).
// Input 1: backend traffic; what belongs to no connection goes to output 2.
rw :: IPRewriter(mg, pass 2);

in :: IPClassifier(dst host 192.0.2.10 and tcp dst port 80,
                   src net 10.1.0.0/24 and tcp src port 80,
                   -);
be :: IPClassifier(dst host 10.1.0.1, dst host 10.1.0.2, dst host 10.1.0.3, dst host 10.1.0.4);
to_web1 :: Counter; to_web2 :: Counter; to_web3 :: Counter; to_web4 :: Counter;
to_clients :: Counter; stray :: Counter; other :: Counter;
dump :: ToDump($OUT);

phase1 -> frames :: Counter -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> in;
phase2 -> frames;
in[0] -> [0]rw;
in[1] -> [1]rw;
in[2] -> other -> Discard;

rw[0] -> be;
be[0] -> to_web1 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:01) -> dump;
be[1] -> to_web2 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:02) -> dump;
be[2] -> to_web3 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:03) -> dump;
be[3] -> to_web4 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:04) -> dump;
rw[1] -> to_clients -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:00:00:fe) -> dump;
rw[2] -> stray -> Discard;

DriverManager(
  wait,
  print "phase 1:      " $(frames.count) "frames",
  print "  to backends  web1" $(to_web1.count) "web2" $(to_web2.count) "web3" $(to_web3.count) "web4" $(to_web4.count),
  print "  to clients   " $(to_clients.count),
  write mg.drain web3,
  print "drained web3",
  write phase2.active true,
  wait,
  print "phase 2:      " $(sub $(frames.count) $(phase1.count)) "more frames; totals:",
  print "  to backends  web1" $(to_web1.count) "web2" $(to_web2.count) "web3" $(to_web3.count) "web4" $(to_web4.count),
  print "  to clients   " $(to_clients.count),
  print "  stray        " $(stray.count) "other" $(other.count),
  print "connections    " $(rw.nmappings) "(" $(mg.lookup_hits) "mapped," $(mg.lookup_failures) "unmapped )",
  print "new connections per backend (name pattern outputs state count):",
  print $(mg.backends));
