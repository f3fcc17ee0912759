// Both ends of a WireGuard tunnel in one configuration, fed with a bundled
// trace: the gateway of examples/wireguard.click and its road warrior
// (examples/wireguard-peer.conf), joined by a simulated wire.
//
//   pronto run --simtime=1700000000 examples/wireguard-tunnel.click
//   pronto run --simtime=1700000000 examples/wireguard-tunnel.click \
//       OUT=/tmp/opened.pcap WIRE=/tmp/sealed.pcap
//
// (1700000000 is the trace's first second: the messages the ends make
// themselves, handshakes and keep-alives, are stamped on the same clock as
// the trace's packets.)
//
// The trace (examples/wireguard.pcap, made by
// scripts/make_wireguard_trace.py) holds plain packets as the hosts on the
// gateway's IN side and the road warrior send them; each enters its own
// end by its source address. What an end seals crosses the wire (a queue;
// $WIRE records it as raw IPv4: Wireshark decodes the WireGuard messages,
// tcpdump shows them as UDP) to the other end's input 1; what an end opens is
// written to $OUT (raw IP). One sealed packet (the only one of 180 bytes
// from the gateway: trace frame 21) is duplicated on the wire, and the
// road warrior's replay window drops the copy. At 1 s the gateway is told
// to rekey; the last part of the trace crosses the new session. At the end
// the example prints what was read and sent, both ends' peers and
// counters. With --simtime the replay, the rekey and the printed ages are
// the same at every run (the keys are not: each handshake draws new
// ephemeral keys, so the sealed bytes differ).

define($TRACE examples/wireguard.pcap, $OUT /tmp/pronto-wireguard-opened.pcap,
       $WIRE /tmp/pronto-wireguard-wire.pcap);

gw :: WireGuard(CONFIG examples/wireguard.conf, ADDRESS 10.202.1.254, PORT 51820, MTU 1420);
rw :: WireGuard(CONFIG examples/wireguard-peer.conf, ADDRESS 10.202.1.1, PORT 51820, MTU 1420);

// The plain side: IPv4 and IPv6, to the road warrior's end if it sent it,
// else to the gateway.
src :: FromDump($TRACE, STOP true, TIMING true);
eth :: Classifier(12/0800, 12/86DD, -);
side :: IPClassifier(src net 10.99.0.0/24 or src net fd99::/64, -);
nonip :: Counter; bad :: Counter;
src -> eth;
eth[0] -> Strip(14) -> chk :: CheckIPHeader -> side;
eth[1] -> Strip(14) -> chk6 :: CheckIP6Header -> side;
eth[2] -> nonip -> Discard;
chk[1] -> bad;
chk6[1] -> bad;
bad -> Discard;
side[0] -> from_rw :: Counter -> [0]rw;
side[1] -> from_in :: Counter -> [0]gw;

// The wire: sealed packets (and each end's handshakes and keep-alives)
// queue up, are recorded, and reach the end they are addressed to.
wire :: Queue(256);
gw[0] -> gw_sent :: Counter -> dup :: Classifier(2/00b4, -);
dup[0] -> copy :: Tee(2) -> wire;
copy[1] -> wire;
dup[1] -> wire;
rw[0] -> rw_sent :: Counter -> wire;
wire -> Unqueue -> ToDump($WIRE, ENCAP IP)
     -> to :: IPClassifier(dst host 10.202.1.1 and udp dst port 51820,
                           dst host 10.202.1.254 and udp dst port 51820, -);
to[0] -> [1]rw;
to[1] -> [1]gw;
to[2] -> lost :: Counter -> Discard;

// What the ends open.
opened :: ToDump($OUT, ENCAP IP);
gw[1] -> gw_opened :: Counter -> opened;
rw[1] -> rw_opened :: Counter -> opened;

DriverManager(wait 1s, write gw.rekey, wait, wait 10ms,
  print "read       " $(src.count) "frames:" $(from_in.count) "from the IN side," $(from_rw.count) "from the road warrior," $(nonip.count) "not IP," $(bad.count) "malformed",
  print "sealed     " $(gw_sent.count) "by the gateway," $(rw_sent.count) "by the road warrior (handshakes and keep-alives included)",
  print "opened     " $(gw_opened.count) "by the gateway," $(rw_opened.count) "by the road warrior",
  print "misrouted  " $(lost.count),
  print "gateway    " $(gw.peers),
  print "road warrior" $(rw.peers),
  print "gateway counters:",
  print $(gw.stats),
  print "road warrior counters:",
  print $(rw.stats));
