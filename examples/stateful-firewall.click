// A dual-stack stateful firewall: hosts in 10.0.0.0/24 and 2001:db8:1::/64
// may open connections the policy allows; from outside only traffic of
// those connections comes in.
//
//   cargo run --release -- run examples/stateful-firewall.click
//   cargo run --release -- run examples/stateful-firewall.click OUT=/tmp/passed.pcap
//
// Reads the bundled trace (both directions, IPv4 then IPv6), applies the
// outbound policy (web, DNS, ping; Neighbor Advertisements for IPv6) to
// packets from the trusted networks, tracks connections of both families
// with StatefulFirewall, writes what passed to $OUT and prints the
// connection table and the drops by reason. Neighbor Discovery passes the
// firewall by its ND policy (the default: pass). Add --simtime for a
// reproducible clock (the table's expiry times).

define($TRACE examples/stateful-firewall.pcap, $OUT /tmp/pronto-stateful-firewall-out.pcap);

src :: FromDump($TRACE, STOP true);
eth :: Classifier(12/0800, 12/86DD, -);
side :: IPClassifier(src net 10.0.0.0/24 or src net 2001:db8:1::/64, -);
policy :: IPFilter(allow tcp dst port 80 or tcp dst port 443,
                   allow udp dst port 53,
                   allow icmp type echo,
                   allow icmp6 type echo-request,
                   allow icmp6 type neighbor-solicit or icmp6 type neighbor-advert,
                   1 all);                          // denied: output 1
fw :: StatefulFirewall(TCP_ESTABLISHED 3600, UDP 30, UDP_STREAM 120, ICMP 30, ND true);
nonip :: Counter; bad :: Counter; denied :: Counter; dropped :: Counter;
out :: Unstrip(14) -> ToDump($OUT);

src -> eth;
eth[2] -> nonip -> Discard;
eth[0] -> Strip(14) -> chk :: CheckIPHeader -> side;
eth[1] -> Strip(14) -> chk6 :: CheckIP6Header -> side;
chk[1] -> bad;
chk6[1] -> bad;
bad -> Discard;
side[0] -> policy -> [0]fw;
policy[1] -> denied -> Discard;
side[1] -> [1]fw;
fw[0] -> out;
fw[1] -> out;
fw[2] -> dropped -> Discard;

DriverManager(wait,
  print "read          " $(src.count) "frames," $(nonip.count) "not IP," $(bad.count) "malformed",
  print "policy denied " $(denied.count),
  print "passed out    " $(fw.trusted_packets),
  print "passed in     " $(fw.untrusted_packets) "(" $(fw.related) "related )",
  print "nd passed     " $(fw.nd_packets),
  print "unsolicited   " $(fw.unsolicited_drops),
  print "no connection " $(fw.no_connection_drops),
  print "invalid       " $(fw.invalid_drops),
  print "fragments     " $(fw.fragment_drops),
  print "dropped       " $(dropped.count),
  print "connections   " $(fw.nconnections) "(" $(fw.nconnections6) "IPv6 )",
  print $(fw.table));
