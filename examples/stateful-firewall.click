// A stateful firewall: hosts in 10.0.0.0/24 may open connections the
// policy allows; from outside only traffic of those connections comes in.
//
//   cargo run --release -- run examples/stateful-firewall.click
//   cargo run --release -- run examples/stateful-firewall.click OUT=/tmp/passed.pcap
//
// Reads the bundled trace (both directions), applies the outbound policy
// (web, DNS, ping) to packets from the trusted network, tracks connections
// with StatefulFirewall, writes what passed to $OUT and prints the
// connection table and the drops by reason. Add --simtime for a
// reproducible clock (the table's expiry times).

define($TRACE examples/stateful-firewall.pcap, $OUT /tmp/pronto-stateful-firewall-out.pcap);

src :: FromDump($TRACE, STOP true);
eth :: Classifier(12/0800, -);
side :: IPClassifier(src net 10.0.0.0/24, -);
policy :: IPFilter(allow tcp dst port 80 or tcp dst port 443,
                   allow udp dst port 53,
                   allow icmp type echo,
                   1 all);                          // denied: output 1
fw :: StatefulFirewall(TCP_ESTABLISHED 3600, UDP 30, UDP_STREAM 120, ICMP 30);
nonip :: Counter; bad :: Counter; denied :: Counter; dropped :: Counter;
out :: Unstrip(14) -> ToDump($OUT);

src -> eth;
eth[1] -> nonip -> Discard;
eth[0] -> Strip(14) -> chk :: CheckIPHeader -> side;
chk[1] -> bad -> Discard;
side[0] -> policy -> [0]fw;
policy[1] -> denied -> Discard;
side[1] -> [1]fw;
fw[0] -> out;
fw[1] -> out;
fw[2] -> dropped -> Discard;

DriverManager(wait,
  print "read          " $(src.count) "frames," $(nonip.count) "not IPv4," $(bad.count) "malformed",
  print "policy denied " $(denied.count),
  print "passed out    " $(fw.trusted_packets),
  print "passed in     " $(fw.untrusted_packets) "(" $(fw.related) "related )",
  print "unsolicited   " $(fw.unsolicited_drops),
  print "no connection " $(fw.no_connection_drops),
  print "invalid       " $(fw.invalid_drops),
  print "dropped       " $(dropped.count),
  print "connections   " $(fw.nconnections),
  print $(fw.table));
