// A stateless edge firewall: the first matching rule wins.
//
//   cargo run --release -- run examples/firewall.click
//   cargo run --release -- run examples/firewall.click OUT=/tmp/allowed.pcap
//
// Reads the bundled trace, drops non-IP and malformed packets, filters the
// rest, writes what was allowed to $OUT (a pcap tcpdump/Wireshark read) and
// prints what happened.

define($TRACE examples/firewall.pcap, $OUT /tmp/pronto-firewall-allowed.pcap);

src :: FromDump($TRACE, STOP true);
eth :: Classifier(12/0800, -);
chk :: CheckIPHeader(DETAILS true);
fw :: IPFilter(deny src net 0.0.0.0/8 or src net 127.0.0.0/8,   // spoofed sources
               1 ip frag,                                        // fragments: own output
               allow tcp dst port 80 and dst net 93.184.0.0/16,
               allow tcp dst port 443,
               deny tcp dst port 22 and not src net 10.0.0.0/23, // ssh only from the admin net
               allow tcp dst port 22,
               allow udp dst port 53 and dst net 8.8.0.0/16,     // our resolvers only
               allow udp dst port 123,
               allow icmp type echo or icmp type echo-reply,
               deny udp dst port 161,
               allow src net 192.168.1.0/24 and tcp,
               deny all);
allowed :: Counter; frags :: Counter; nonip :: Counter; bad :: Counter;

src -> eth;
eth[1] -> nonip -> Discard;
eth[0] -> Strip(14) -> chk -> fw;
chk[1] -> bad -> Discard;
fw[0] -> allowed -> Unstrip(14) -> ToDump($OUT);
fw[1] -> frags -> Discard;

DriverManager(wait,
  print "read        " $(src.count) "packets",
  print "not IPv4    " $(nonip.count),
  print "malformed   " $(bad.count),
  print "fragments   " $(frags.count),
  print "allowed     " $(allowed.count) "packets," $(allowed.byte_count) "bytes ->" $OUT,
  print "denied      " $(sub $(src.count) $(nonip.count) $(bad.count) $(frags.count) $(allowed.count)));
