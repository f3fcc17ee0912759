// The BRAS of examples/bras.click replayed from a bundled trace: the same
// PPPoEServer, fed with what three subscribers and a host on the network
// sent, so that its answers can be read in a pcap and checked byte for
// byte (crates/cli/tests/example_bras.rs does).
//
//   pronto run --simtime=1795737600 examples/bras-trace.click
//   pronto run --simtime=1795737600 examples/bras-trace.click \
//       OUT=/tmp/to-subscribers.pcap NET=/tmp/to-network.pcap ACCT=/tmp/acct.log
//
// (1795737600 is the trace's first second: the accounting records and
// sessions are stamped on the same clock as the trace's frames.)
//
// The trace (examples/bras.pcap, made by scripts/make_bras_trace.py) holds
// the subscribers' side of: alice's session (PADI with a Host-Uniq, PADR
// with the server's cookie, LCP both ways, PAP, IPCP from 0.0.0.0 to the
// address the server offers, IPv6CP, a ping answered from the network, a
// DNS query, an IPv6 packet, an LCP echo), frames the server must refuse
// and count (a spoofed source, an unknown session, a truncated frame, a
// packet from the network for an address no session holds), bob's session
// (his static address; IPv4 only: he rejects IPv6CP), mallory's wrong
// password, and alice's PADT. Then the operator ends bob's session with
// the `kill` handler. What the server sends to subscribers goes to $OUT
// (Ethernet), what it decapsulates toward the network to $NET (raw IP);
// the accounting records to $ACCT (appended). At the end the example prints
// what was read and sent, the sessions before the kill, and the server's
// counters.
//
// SEED makes the server's cookies, magic numbers and challenges the same
// at every run, so that the subscribers' frames in the trace (which echo
// them) stay valid: it is for traces and tests, never for production.

define($TRACE examples/bras.pcap, $SUBS examples/bras-subscribers.txt,
       $OUT /tmp/pronto-bras-to-subscribers.pcap, $NET /tmp/pronto-bras-to-network.pcap,
       $ACCT /tmp/pronto-bras-trace-accounting.log, $AMAC 02:00:00:00:01:fe);

bras :: PPPoEServer(MAC $AMAC, SUBSCRIBERS $SUBS, POOL 10.64.0.0/16, LOCAL 10.64.0.1,
                    AC_NAME pronto-bras, SERVICE_NAME internet, AUTH pap,
                    ECHO_INTERVAL 10, ECHO_FAILURES 3, INTERIM 300,
                    ACCOUNTING $ACCT, CAPACITY 16384, SEED 1);

src :: FromDump($TRACE, STOP true, TIMING true);
src -> side :: Classifier(12/8863, 12/8864, 12/0800, -);

// Subscribers: PPPoE discovery and sessions.
side[0], side[1] -> from_subs :: Counter -> [0]bras;
bras[0] -> to_subs :: Counter -> ToDump($OUT);

// From subscribers: IPv4 checked, then toward the network; IPv6 counted.
to_net :: ToDump($NET, ENCAP IP);
bras[1] -> fam :: Classifier(0/40%f0, -);
fam[0] -> CheckIPHeader -> up :: Counter -> to_net;
fam[1] -> up6 :: Counter -> to_net;

// The network: IPv4 for the pool, into the sessions.
side[2] -> Strip(14) -> CheckIPHeader -> down :: Counter -> [1]bras;
side[3] -> other :: Counter -> Discard;

DriverManager(wait,
  print "read         " $(src.count) "frames:" $(from_subs.count) "from subscribers," $(down.count) "from the network," $(other.count) "other",
  print "to subscribers" $(to_subs.count) "frames",
  print "to the network" $(up.count) "IPv4," $(up6.count) "IPv6",
  print "sessions:",
  print $(bras.sessions),
  write bras.kill bob,
  wait 10ms,
  print "after kill bob:" $(bras.count) "sessions," $(to_subs.count) "frames to subscribers",
  print "counters:",
  print $(bras.stats));
