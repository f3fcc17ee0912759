// A dual-stack layer-4 load balancer: clients connect to the virtual
// service 192.0.2.10:80 or [2001:db8::10]:80; each new connection goes to
// one of four backends of its own family chosen by Maglev consistent
// hashing (destination NAT; the mapper keeps one Maglev table per family
// and never translates between them), and the backends' answers are
// translated back so that clients see the VIP as their source.
//
//   cargo run --release -- run examples/lb.click
//   cargo run --release -- run examples/lb.click OUT=/tmp/lb.pcap
//
// The bundled trace has two phases, one second apart. After the first, the
// operator drains backends web3 and v6web3 through the mapper's write
// handler: they get no new connections, while their existing ones (and
// everyone else's) keep their backend, because the rewriter's flow table
// holds them. Then the
// second phase is replayed: the old connections close, new clients arrive.
// What leaves the balancer is written to $OUT; per-backend counts are
// printed after each phase. scripts/make_lb_trace.py made the trace.

define($TRACE examples/lb.pcap, $OUT /tmp/pronto-lb-out.pcap);

// The same trace read twice: up to the gap between the phases, then after it.
phase1 :: FromDump($TRACE, STOP true, END_AFTER 1.5s);
phase2 :: FromDump($TRACE, STOP true, START_AFTER 1.5s, ACTIVE false);

// Outputs: IPv4 to backends 0, to clients 1; IPv6 to backends 3, to
// clients 4; stray backend traffic 2.
mg :: MaglevIPMapper(web1 - - 10.1.0.1 80 0 1,
                     web2 - - 10.1.0.2 80 0 1,
                     web3 - - 10.1.0.3 80 0 1,
                     web4 - - 10.1.0.4 80 0 1,
                     v6web1 - - 2001:db8:1::1 80 3 4,
                     v6web2 - - 2001:db8:1::2 80 3 4,
                     v6web3 - - 2001:db8:1::3 80 3 4,
                     v6web4 - - 2001:db8:1::4 80 3 4);
// Input 0: connections to the VIPs (new ones through the mapper).
// Input 1: backend traffic; what belongs to no connection goes to output 2.
rw :: IPRewriter(mg, pass 2);

in :: IPClassifier(dst host 192.0.2.10 and tcp dst port 80,
                   src net 10.1.0.0/24 and tcp src port 80,
                   dst host 2001:db8::10 and tcp dst port 80,
                   src net 2001:db8:1::/64 and tcp src port 80,
                   -);
be :: IPClassifier(dst host 10.1.0.1, dst host 10.1.0.2, dst host 10.1.0.3, dst host 10.1.0.4);
be6 :: IPClassifier(dst host 2001:db8:1::1, dst host 2001:db8:1::2,
                    dst host 2001:db8:1::3, dst host 2001:db8:1::4);
to_web1 :: Counter; to_web2 :: Counter; to_web3 :: Counter; to_web4 :: Counter;
to_v6web1 :: Counter; to_v6web2 :: Counter; to_v6web3 :: Counter; to_v6web4 :: Counter;
to_clients :: Counter; to_clients6 :: Counter; stray :: Counter; other :: Counter;
dump :: ToDump($OUT);

phase1 -> frames :: Counter -> eth :: Classifier(12/0800, 12/86dd);
phase2 -> frames;
eth[0] -> Strip(14) -> CheckIPHeader -> in;
eth[1] -> Strip(14) -> CheckIP6Header -> in;
in[0] -> [0]rw;
in[1] -> [1]rw;
in[2] -> [0]rw;
in[3] -> [1]rw;
in[4] -> other -> Discard;

rw[0] -> be;
be[0] -> to_web1 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:01) -> dump;
be[1] -> to_web2 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:02) -> dump;
be[2] -> to_web3 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:03) -> dump;
be[3] -> to_web4 -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:01:00:04) -> dump;
rw[1] -> to_clients -> EtherEncap(0x0800, 02:00:00:00:00:0a, 02:00:00:00:00:fe) -> dump;
rw[2] -> stray -> Discard;
rw[3] -> be6;
be6[0] -> to_v6web1 -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:01:00:11) -> dump;
be6[1] -> to_v6web2 -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:01:00:12) -> dump;
be6[2] -> to_v6web3 -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:01:00:13) -> dump;
be6[3] -> to_v6web4 -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:01:00:14) -> dump;
rw[4] -> to_clients6 -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:fe) -> dump;

DriverManager(
  wait,
  print "phase 1:      " $(frames.count) "frames",
  print "  to backends  web1" $(to_web1.count) "web2" $(to_web2.count) "web3" $(to_web3.count) "web4" $(to_web4.count),
  print "  to clients   " $(to_clients.count),
  print "  IPv6 backends v6web1" $(to_v6web1.count) "v6web2" $(to_v6web2.count) "v6web3" $(to_v6web3.count) "v6web4" $(to_v6web4.count),
  print "  IPv6 clients " $(to_clients6.count),
  write mg.drain web3,
  write mg.drain v6web3,
  print "drained web3 and v6web3",
  write phase2.active true,
  wait,
  print "phase 2:      " $(sub $(frames.count) $(phase1.count)) "more frames; totals:",
  print "  to backends  web1" $(to_web1.count) "web2" $(to_web2.count) "web3" $(to_web3.count) "web4" $(to_web4.count),
  print "  to clients   " $(to_clients.count),
  print "  IPv6 backends v6web1" $(to_v6web1.count) "v6web2" $(to_v6web2.count) "v6web3" $(to_v6web3.count) "v6web4" $(to_v6web4.count),
  print "  IPv6 clients " $(to_clients6.count),
  print "  stray        " $(stray.count) "other" $(other.count),
  print "connections    " $(rw.nmappings) "(" $(mg.lookup_hits) "mapped," $(mg.lookup_failures) "unmapped )",
  print "new connections per backend (name pattern outputs state count):",
  print $(mg.backends));
