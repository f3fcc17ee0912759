// A signature-based intrusion detection sensor (pronto's IDSMatcher).
//
//   cargo run --release -- run examples/ids.click
//   cargo run --release -- run examples/ids.click OUT=/tmp/clean.pcap ALERTS=/tmp/alerted.pcap LOG=/tmp/fast.log
//
// Reads the bundled trace (made by scripts/make_ids_trace.py), checks the IP
// headers and matches every IPv4 and IPv6 packet against examples/ids.rules
// (web attacks, shellcode, scans, policy; HOME_NET holds an IPv6 prefix) in
// one multi-pattern pass. Clean packets
// go to $OUT, alerted ones (with the rule's sid in their annotation) to
// $ALERTS; one fast.log-style line per alert goes to $LOG. Matching is per
// packet: no stream reassembly, no defragmentation (see docs/ids.md).

define($TRACE examples/ids.pcap, $OUT /tmp/pronto-ids-out.pcap,
       $ALERTS /tmp/pronto-ids-alerts.pcap, $LOG /tmp/pronto-ids-fast.log);

src :: FromDump($TRACE, STOP true);
eth :: Classifier(12/0800, 12/86DD, -);
chk :: CheckIPHeader;
chk6 :: CheckIP6Header;
ids :: IDSMatcher(examples/ids.rules, LOG $LOG,
                  HOME_NET [192.168.1.0/24,192.168.2.0/24,2001:db8:1::/64]);
clean :: Counter; alerted :: Counter; nonip :: Counter; bad :: Counter;

src -> eth;
eth[2] -> nonip -> Discard;
eth[0] -> Strip(14) -> chk -> ids;
eth[1] -> Strip(14) -> chk6 -> ids;
chk[1] -> bad;
chk6[1] -> bad;
bad -> Discard;
ids[0] -> clean -> Unstrip(14) -> ToDump($OUT);
ids[1] -> alerted -> Unstrip(14) -> ToDump($ALERTS);

DriverManager(wait,
  print "read          " $(src.count) "packets",
  print "not IP        " $(nonip.count),
  print "malformed     " $(bad.count),
  print "rules         " $(ids.rules) "loaded," $(ids.skipped_rules) "skipped",
  print "inspected     " $(ids.packets),
  print "alert events  " $(ids.alerts) "->" $LOG,
  print "drop verdicts " $(ids.drops),
  print "clean         " $(clean.count) "packets ->" $OUT,
  print "alerted       " $(alerted.count) "packets ->" $ALERTS,
  print "hits (sid count):",
  print $(ids.hits));
