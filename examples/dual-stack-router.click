// A dual-stack router between two Ethernet interfaces: IPv4 with ARP,
// IPv6 with Neighbor Discovery, both done by pronto; TTL and hop limit
// decremented, with ICMP and ICMPv6 time-exceeded errors; pings to the
// router's own addresses answered.
//
//   pronto run examples/dual-stack-router.click A=eth0 B=eth1 \
//       AMAC=02:00:00:00:01:fe BMAC=02:00:00:00:02:fe
//
// The defaults number the two sides as the namespace test does
// (crates/cli/tests/dual_stack.rs): side A 10.201.1.0/24 and
// 2001:db8:1::/64, side B 10.201.2.0/24 and 2001:db8:2::/64; the router
// is .254 and ::fe on each. Hosts route through it (`ip route add default
// via 10.201.1.254`, `ip -6 route add default via 2001:db8:1::fe`); the
// interfaces' MACs are the router's link-layer addresses (ARP and ND
// answer with them).
//
// Per interface: a Classifier splits ARP queries, ARP replies, IPv4,
// Neighbor Solicitations, Neighbor Advertisements (ICMPv6 with hop limit
// 255, RFC 4861) and other IPv6. ARPResponder and IP6NDAdvertiser answer
// for the interface's addresses; ARPQuerier and IP6NDSolicitor resolve
// next hops (packets wait for the answer) and take the answers. Checked
// packets are looked up (RadixIPLookup, LookupIP6Route): the router's
// own addresses go to local delivery (echo requests answered, the rest
// counted and dropped), the connected nets to their interface, where the
// TTL or hop limit is decremented (expired packets answered with a
// time-exceeded error from the router's address on the side the packet
// came in on, routed like any packet).

define($A a, $B b, $AMAC 02:00:00:00:01:fe, $BMAC 02:00:00:00:02:fe,
       $A4 10.201.1.254, $ANET4 10.201.1.0/24, $B4 10.201.2.254, $BNET4 10.201.2.0/24,
       $A6 2001:db8:1::fe, $ANET6 2001:db8:1::/64, $B6 2001:db8:2::fe, $BNET6 2001:db8:2::/64);

out_a :: Queue(1024) -> ToDevice($A);
out_b :: Queue(1024) -> ToDevice($B);
arpq_a :: ARPQuerier($A4, $AMAC) -> out_a;
nds_a :: IP6NDSolicitor($A6, $AMAC) -> out_a;
arpq_b :: ARPQuerier($B4, $BMAC) -> out_b;
nds_b :: IP6NDSolicitor($B6, $BMAC) -> out_b;

// Routing tables: 0 local, 1 side A, 2 side B.
rt4 :: RadixIPLookup($A4/32 0, $B4/32 0, $ANET4 1, $BNET4 2);
rt6 :: LookupIP6Route($A6/128 ::0 0, $B6/128 ::0 0, $ANET6 ::0 1, $BNET6 ::0 2);

// Side A
FromDevice($A, PROMISC true)
    -> ca :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800,
                        12/86dd 20/3aff 54/87, 12/86dd 20/3aff 54/88, 12/86dd, -);
ca[0] -> ARPResponder($A4 $AMAC) -> out_a;
ca[1] -> [1]arpq_a;
ca[2] -> Paint(1) -> Strip(14) -> CheckIPHeader -> ip4_in_a :: Counter -> GetIPAddress(16) -> rt4;
ca[3] -> IP6NDAdvertiser($A6/128 $AMAC) -> out_a;
ca[4] -> [1]nds_a;
ca[5] -> Paint(1) -> Strip(14) -> CheckIP6Header -> ip6_in_a :: Counter -> GetIP6Address(24) -> rt6;
ca[6] -> other_a :: Counter -> Discard;

// Side B
FromDevice($B, PROMISC true)
    -> cb :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800,
                        12/86dd 20/3aff 54/87, 12/86dd 20/3aff 54/88, 12/86dd, -);
cb[0] -> ARPResponder($B4 $BMAC) -> out_b;
cb[1] -> [1]arpq_b;
cb[2] -> Paint(2) -> Strip(14) -> CheckIPHeader -> ip4_in_b :: Counter -> GetIPAddress(16) -> rt4;
cb[3] -> IP6NDAdvertiser($B6/128 $BMAC) -> out_b;
cb[4] -> [1]nds_b;
cb[5] -> Paint(2) -> Strip(14) -> CheckIP6Header -> ip6_in_b :: Counter -> GetIP6Address(24) -> rt6;
cb[6] -> other_b :: Counter -> Discard;

// Local delivery: IPv4 echo requests answered; the rest counted.
rt4[0] -> local4 :: IPClassifier(icmp type echo, -);
local4[0] -> ICMPPingResponder -> rt4;
local4[1] -> local4_other :: Counter -> Discard;
rt6[0] -> local6 :: Counter -> Discard;

// Forwarding, IPv4
rt4[1] -> dt4_a :: DecIPTTL -> fwd4_a :: Counter -> [0]arpq_a;
rt4[2] -> dt4_b :: DecIPTTL -> fwd4_b :: Counter -> [0]arpq_b;
// Time exceeded, from the router's address on the side the packet came
// in on (the paint), as a host would choose it to reach the sender.
dt4_a[1] -> expired4 :: PaintSwitch;
dt4_b[1] -> expired4;
expired4[0] -> Discard;
expired4[1] -> ICMPError($A4, timeexceeded) -> rt4;
expired4[2] -> ICMPError($B4, timeexceeded) -> rt4;

// Forwarding, IPv6
rt6[1] -> dh6_a :: DecIP6HLIM -> fwd6_a :: Counter -> [0]nds_a;
rt6[2] -> dh6_b :: DecIP6HLIM -> fwd6_b :: Counter -> [0]nds_b;
dh6_a[1] -> expired6 :: PaintSwitch;
dh6_b[1] -> expired6;
expired6[0] -> Discard;
expired6[1] -> ICMP6Error($A6, 3, 0) -> rt6;
expired6[2] -> ICMP6Error($B6, 3, 0) -> rt6;
