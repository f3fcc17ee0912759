// A BRAS: subscribers on interface A reach the network on interface B
// through PPPoE sessions that PPPoEServer terminates (discovery, LCP,
// PAP or CHAP-MD5 against examples/bras-subscribers.txt, IPCP addresses
// from 10.64.0.0/16, IPv6CP), with accounting records in $ACCT and
// per-subscriber policing by FlowPolicer on the subscribers' (checked)
// source addresses.
//
//   pronto run examples/bras.click A=eth0 B=eth1 BMAC=02:00:00:00:02:fe
//   pppoe-discovery -I eth0          # on a subscriber: finds AC `pronto-bras`
//   socat - UNIX:/tmp/pronto-bras.ctl  # then `READ bras.sessions`,
//                                      # `WRITE bras.kill alice`
//
// Side B is routed: the BRAS is $B4 on $BNET4, answers ARP for it, and
// resolves the next hop of packets from subscribers ($GW, a host on B, or
// the destination itself when it is on $BNET4). Hosts on B route the pool
// through $B4. crates/cli/tests/bras.rs runs this with pppoe-discovery and
// a scapy PPPoE client in network namespaces.

define($A a, $B b, $AMAC 02:00:00:00:01:fe, $BMAC 02:00:00:00:02:fe,
       $B4 10.202.2.254, $BNET4 10.202.2.0/24, $GW 10.202.2.1,
       $SUBS examples/bras-subscribers.txt, $ACCT /tmp/pronto-bras-accounting.log,
       $AUTH pap, $RATE 100Mbps, $CONTROL /tmp/pronto-bras.ctl);

// Operators list and end sessions through the control socket.
ControlSocket(unix, $CONTROL);

bras :: PPPoEServer(MAC $AMAC, SUBSCRIBERS $SUBS, POOL 10.64.0.0/16, LOCAL 10.64.0.1,
                    AC_NAME pronto-bras, SERVICE_NAME internet, AUTH $AUTH,
                    ECHO_INTERVAL 10, ECHO_FAILURES 3, INTERIM 300,
                    ACCOUNTING $ACCT, CAPACITY 16384);

out_a :: Queue(4096) -> ToDevice($A);
out_b :: Queue(4096) -> ToDevice($B);
arpq :: ARPQuerier($B4, $BMAC) -> out_b;
rt :: RadixIPLookup($BNET4 0, 0.0.0.0/0 $GW 0);

// Subscribers: PPPoE discovery and sessions only.
FromDevice($A, PROMISC true) -> sub :: Classifier(12/8863, 12/8864, -);
sub[0], sub[1] -> [0]bras;
sub[2] -> not_pppoe :: Counter -> Discard;
bras[0] -> out_a;

// From subscribers: IPv4 checked, policed per subscriber, routed to B.
bras[1] -> fam :: Classifier(0/40%f0, -);
fam[0] -> CheckIPHeader -> police :: FlowPolicer(RATE $RATE, KEY src) -> up :: Counter -> rt;
police[1] -> policed :: Counter -> Discard;
fam[1] -> ip6_up :: Counter -> Discard;   // no IPv6 route on side B here
rt[0] -> DecIPTTL -> [0]arpq;

// Network side: ARP, and IPv4 for the pool into the sessions.
FromDevice($B, PROMISC true)
    -> net :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
net[0] -> ARPResponder($B4 $BMAC) -> out_b;
net[1] -> [1]arpq;
net[2] -> Strip(14) -> CheckIPHeader -> down :: Counter -> [1]bras;
net[3] -> other_b :: Counter -> Discard;
