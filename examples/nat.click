// A two-interface source NAT (NAPT) for the inside network 10.0.0.0/24
// behind the public address 198.51.100.1.
//
//   cargo run --release -- run examples/nat.click
//   cargo run --release -- run examples/nat.click OUT=/tmp/translated.pcap
//
// The bundled trace holds what both interfaces received: a frame addressed
// to the inside interface's MAC came from the inside, one addressed to the
// outside interface's MAC from the upstream gateway. Inside TCP and UDP
// flows get public ports 1024, 1025, ... in the order they appear ('#':
// sequential, so runs are reproducible); replies to those ports are mapped
// back. Pings get echo identifiers the same way (ICMPPingRewriter), and
// ICMP errors about translated flows (traceroute hops, port unreachables)
// are translated back to the inside host (ICMPRewriter). Anything else
// arriving from the outside is unsolicited: dropped and counted. Translated
// packets are written to $OUT with new Ethernet headers, and a summary is
// printed.

define($TRACE examples/nat.pcap, $OUT /tmp/pronto-nat-out.pcap,
       $PUBLIC 198.51.100.1);

src :: FromDump($TRACE, STOP true);
// By destination MAC: inside interface, outside interface; the rest is
// not IPv4 for us (ARP and the like: a full router would answer it).
link :: Classifier(0/020000000001 12/0800, 0/020000000002 12/0800, -);

// What inside hosts send: their TCP/UDP, their pings, and anything else
// (foreign source addresses, other protocols), which is dropped.
inside :: IPClassifier(src net 10.0.0.0/24 and (tcp or udp),
                       src net 10.0.0.0/24 and icmp type echo,
                       -);
// What reaches the public address: TCP/UDP, echo replies, other ICMP.
outside :: IPClassifier(dst host $PUBLIC and (tcp or udp),
                        dst host $PUBLIC and icmp type echo-reply,
                        dst host $PUBLIC and icmp,
                        -);

// Input 0: inside flows get a public source address and port.
// Input 1: outside packets that match no mapping go to output 2.
rw :: IPRewriter(pattern $PUBLIC 1024-65535# - - 0 1, pass 2);
pr :: ICMPPingRewriter(pattern $PUBLIC 1024-65535# - - 0 1, pass 2);
// ICMP errors about flows of rw or pr, translated back; it drops ICMP that
// is no error or about no flow of theirs (counted as the difference of
// icmp_in and in_errors).
errs :: ICMPRewriter(rw pr);

out_flows :: Counter; out_pings :: Counter;
in_replies :: Counter; in_pings :: Counter; in_errors :: Counter;
icmp_in :: Counter; unsolicited :: Counter; spoofed :: Counter; notours :: Counter; other :: Counter;

// Frames leaving the outside interface go to the upstream gateway; frames
// leaving the inside interface go to the host they are addressed to.
to_outside :: EtherEncap(0x0800, 02:00:00:00:00:02, 02:00:00:00:fe:01);
to_inside :: IPClassifier(dst host 10.0.0.2, dst host 10.0.0.3, dst host 10.0.0.4, -);
dump :: ToDump($OUT);

src -> link;
link[0] -> Strip(14) -> CheckIPHeader -> inside;
link[1] -> Strip(14) -> CheckIPHeader -> outside;
link[2] -> other -> Discard;

inside[0] -> [0]rw;
inside[1] -> [0]pr;
inside[2] -> spoofed -> Discard;
outside[0] -> [1]rw;
outside[1] -> [1]pr;
outside[2] -> icmp_in -> errs;
outside[3] -> notours -> Discard;

rw[0] -> out_flows -> to_outside;
pr[0] -> out_pings -> to_outside;
rw[1] -> in_replies -> to_inside;
pr[1] -> in_pings -> to_inside;
errs[0] -> in_errors -> to_inside;
rw[2] -> unsolicited;
pr[2] -> unsolicited;
unsolicited -> Discard;

to_outside -> dump;
to_inside[0] -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:10:02) -> dump;
to_inside[1] -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:10:03) -> dump;
to_inside[2] -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:10:04) -> dump;
to_inside[3] -> Discard;

DriverManager(wait,
  print "read            " $(src.count) "frames",
  print "outbound        " $(add $(out_flows.count) $(out_pings.count)) "packets:" $(out_flows.count) "TCP/UDP," $(out_pings.count) "pings",
  print "inbound         " $(add $(in_replies.count) $(in_pings.count) $(in_errors.count)) "packets:" $(in_replies.count) "replies," $(in_pings.count) "ping replies," $(in_errors.count) "ICMP errors",
  print "unsolicited     " $(add $(unsolicited.count) $(sub $(icmp_in.count) $(in_errors.count))) "dropped:" $(unsolicited.count) "TCP/UDP/echo reply," $(sub $(icmp_in.count) $(in_errors.count)) "other ICMP",
  print "not ours        " $(notours.count) "to other addresses," $(spoofed.count) "from foreign inside sources," $(other.count) "not IPv4",
  print "mappings        " $(rw.nmappings) "TCP/UDP," $(pr.nmappings) "ping",
  print "written         " $(add $(out_flows.count) $(out_pings.count) $(in_replies.count) $(in_pings.count) $(in_errors.count)) "->" $OUT);
