// A two-interface IP router in the shape of Click's classic IP router
// (conf/make-ip-conf.pl; the Click paper's IP router figure), with pcap
// files in place of network devices.
//
//   cargo run --release -- run examples/router.click
//   cargo run --release -- run examples/router.click OUT=/tmp/routed.pcap
//
// With a full-size BGP-like table (170,000 routes; its first 30 lines are
// examples/router-routes.txt, so the bundled trace routes the same):
//
//   python3 scripts/make_bgp_table.py > /tmp/routes.txt
//   cargo run --release -- run examples/router.click ROUTES=/tmp/routes.txt
//
// Interfaces: eth0 10.0.0.1/24 (MAC 02:00:0a:00:00:01, route output 1),
// eth1 10.0.1.1/24 (MAC 02:00:0a:00:01:01, route output 2). The bundled
// trace (scripts/make_router_trace.py) holds what both interfaces received;
// stations on eth0's segment have MACs 02:00:0a:00:00:xx, those on eth1's
// 02:00:0a:00:01:xx, so the source MAC says which interface a frame came in
// on. Per interface: HostEtherFilter stands for the device's address filter
// (it sets the packet type that DropBroadcasts reads); a Classifier splits
// ARP queries, ARP replies, IP and the rest; ARPResponder answers queries
// for the interface address; ARPQuerier resolves next hops (packets wait
// for the reply) and takes the replies. IP packets are painted with their
// interface, checked, looked up (the interface and broadcast addresses are
// routed to output 0, local delivery; the connected nets and $ROUTES to the
// interfaces), then each output path drops link-level broadcasts, sends an
// ICMP redirect when a packet leaves by the interface it came in on
// (PaintTee, which Click's paper drew as CheckPaint), processes IP options,
// fixes the source of the router's own ICMP errors, decrements the TTL and
// fragments to 1500 bytes; the errors (parameter problem, time exceeded,
// needfrag, redirect) are routed like any packet. Everything sent on either
// interface (ARP queries and replies, forwarded frames, ICMP errors) is
// written to $OUT, and a summary is printed.

define($TRACE examples/router.pcap, $OUT /tmp/pronto-router-out.pcap,
       $ROUTES examples/router-routes.txt);

src :: FromDump($TRACE, STOP true);
out :: Counter -> ToDump($OUT);

// Which interface received a frame: by the sender's segment.
seg :: Classifier(6/02000a0000, 6/02000a0001, -);
src -> seg;
seg[2] -> foreign :: Counter -> Discard;

// Shared IP input path and routing table
ip :: Strip(14)
    -> chk :: CheckIPHeader(INTERFACES 10.0.0.1/24 10.0.1.1/24)
    -> ip_in :: Counter
    -> GetIPAddress(16)
    -> rt :: RadixIPLookup(10.0.0.1/32 0, 10.0.0.255/32 0, 10.0.0.0/32 0,
                           10.0.1.1/32 0, 10.0.1.255/32 0, 10.0.1.0/32 0,
                           10.0.0.0/24 1, 10.0.1.0/24 2,
                           255.255.255.255/32 0, 0.0.0.0/32 0,
                           ROUTES $ROUTES);

// Input and output paths for eth0
seg[0] -> HostEtherFilter(02:00:0a:00:00:01)
    -> c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c0[0] -> arpq_in0 :: Counter -> ar0 :: ARPResponder(10.0.0.1 02:00:0a:00:00:01)
    -> arpa0 :: Counter -> out;
arpq0 :: ARPQuerier(10.0.0.1, 02:00:0a:00:00:01) -> out;
c0[1] -> arpr_in0 :: Counter -> [1]arpq0;
c0[2] -> Paint(1) -> ip;
c0[3] -> other0 :: Counter -> Discard;

// Input and output paths for eth1
seg[1] -> HostEtherFilter(02:00:0a:00:01:01)
    -> c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c1[0] -> arpq_in1 :: Counter -> ar1 :: ARPResponder(10.0.1.1 02:00:0a:00:01:01)
    -> arpa1 :: Counter -> out;
arpq1 :: ARPQuerier(10.0.1.1, 02:00:0a:00:01:01) -> out;
c1[1] -> arpr_in1 :: Counter -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
c1[3] -> other1 :: Counter -> Discard;

// Local delivery
rt[0] -> local :: Counter -> Discard;

// Forwarding path for eth0
rt[1] -> db0 :: DropBroadcasts
    -> cp0 :: PaintTee(1)
    -> gio0 :: IPGWOptions(10.0.0.1)
    -> FixIPSrc(10.0.0.1)
    -> dt0 :: DecIPTTL
    -> fr0 :: IPFragmenter(1500)
    -> fwd0 :: Counter
    -> [0]arpq0;
dt0[1] -> ttl0 :: Counter -> ICMPError(10.0.0.1, timeexceeded) -> rt;
fr0[1] -> frag0 :: Counter -> ICMPError(10.0.0.1, unreachable, needfrag, PMTU 1500) -> rt;
gio0[1] -> opt0 :: Counter -> ICMPError(10.0.0.1, parameterproblem) -> rt;
cp0[1] -> redir0 :: Counter -> ICMPError(10.0.0.1, redirect, host) -> rt;

// Forwarding path for eth1
rt[2] -> db1 :: DropBroadcasts
    -> cp1 :: PaintTee(2)
    -> gio1 :: IPGWOptions(10.0.1.1)
    -> FixIPSrc(10.0.1.1)
    -> dt1 :: DecIPTTL
    -> fr1 :: IPFragmenter(1500)
    -> fwd1 :: Counter
    -> [0]arpq1;
dt1[1] -> ttl1 :: Counter -> ICMPError(10.0.1.1, timeexceeded) -> rt;
fr1[1] -> frag1 :: Counter -> ICMPError(10.0.1.1, unreachable, needfrag, PMTU 1500) -> rt;
gio1[1] -> opt1 :: Counter -> ICMPError(10.0.1.1, parameterproblem) -> rt;
cp1[1] -> redir1 :: Counter -> ICMPError(10.0.1.1, redirect, host) -> rt;

DriverManager(wait,
  print "read            " $(src.count) "frames",
  print "arp             " $(arpq_in0.count) "+" $(arpq_in1.count) "queries in," $(add $(arpa0.count) $(arpa1.count)) "replies out," $(add $(arpr_in0.count) $(arpr_in1.count)) "replies in," $(add $(arpq0.queries) $(arpq1.queries)) "queries out",
  print "ip in           " $(ip_in.count) "packets," $(chk.drops) "bad headers," $(local.count) "local",
  print "routed out      " $(fwd0.count) "on eth0," $(fwd1.count) "on eth1 (ICMP errors included)," $(add $(db0.drops) $(db1.drops)) "link broadcasts dropped",
  print "icmp errors     " $(add $(ttl0.count) $(ttl1.count)) "time exceeded," $(add $(frag0.count) $(frag1.count)) "needfrag," $(add $(opt0.count) $(opt1.count)) "parameter problem," $(add $(redir0.count) $(redir1.count)) "redirect",
  print "fragments       " $(add $(fr0.fragments) $(fr1.fragments)),
  print "not IP/ARP      " $(add $(other0.count) $(other1.count)) "frames," $(foreign.count) "from other segments",
  print "written         " $(out.count) "->" $OUT);
