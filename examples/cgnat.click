// A carrier-grade NAT (RFC 6888): subscribers in 100.64.0.0/24 share the
// four public addresses of 198.51.100.4/30.
//
//   cargo run --release -- run examples/cgnat.click
//   cargo run --release -- run examples/cgnat.click OUT=/tmp/nat.pcap LOG=/tmp/nat.log
//
// Reads the bundled trace (both directions), sends packets from subscriber
// addresses to the NAT's inside input and the rest to its outside input,
// writes every translated packet to $OUT and the port-block allocation log
// to $LOG, and prints the NAT's mappings, blocks and drops. ICMP errors
// about translated packets (a TTL exceeded from outside, a port unreachable
// from a subscriber) are translated both ways (RFC 5508). Each subscriber
// gets blocks of 16 ports on one paired address, at most 2 blocks. Add
// --simtime for a reproducible clock (the log's timestamps).

define($TRACE examples/cgnat.pcap, $OUT /tmp/pronto-cgnat-out.pcap, $LOG /tmp/pronto-cgnat-alloc.log);

src :: FromDump($TRACE, STOP true);
eth :: Classifier(12/0800, -);
side :: IPClassifier(src net 100.64.0.0/10, -);
nat :: CGNAT(EXTERNAL 198.51.100.4/30, INTERNAL 100.64.0.0/24,
             PORTS 1024-1087, BLOCK_SIZE 16, BLOCKS_PER_SUBSCRIBER 2,
             UDP 300, TCP_TRANSITORY 240, LOG $LOG);
nonip :: Counter; bad :: Counter; dropped :: Counter;
out :: Unstrip(14) -> ToDump($OUT);

src -> eth;
eth[1] -> nonip -> Discard;
eth[0] -> Strip(14) -> chk :: CheckIPHeader -> side;
chk[1] -> bad -> Discard;
side[0] -> [0]nat;
side[1] -> [1]nat;
nat[0] -> out;
nat[1] -> out;
nat[2] -> dropped -> Discard;

DriverManager(wait,
  print "read          " $(src.count) "frames," $(nonip.count) "not IPv4," $(bad.count) "malformed",
  print "outbound      " $(nat.outbound),
  print "inbound       " $(nat.inbound),
  print "hairpinned    " $(nat.hairpinned),
  print "icmp errors   " $(nat.icmp_errors),
  print "mappings      " $(nat.nmappings),
  print "subscribers   " $(nat.nsubscribers),
  print "blocks        " $(nat.nblocks),
  print "exhaustion    " $(nat.exhaustion_drops),
  print "no mapping    " $(nat.no_mapping_drops),
  print "not internal  " $(nat.not_internal_drops),
  print "dropped       " $(dropped.count),
  print "port blocks:",
  print $(nat.blocks));
