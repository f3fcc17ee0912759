// A stateful NAT64 (RFC 6146) between an IPv6-only side A and an
// IPv4-only side B, with Neighbor Discovery and ARP done by pronto: IPv6
// hosts reach IPv4 hosts at their RFC 6052 addresses under the well-known
// prefix 64:ff9b::/96 (10.202.2.1 is 64:ff9b::aca:201), sharing the
// router's IPv4 address. examples/nat64.click is the stateless twin
// (Click's AddressTranslator and ProtocolTranslator64/46).
//
//   pronto run examples/nat64-stateful.click A=eth0 B=eth1 \
//       AMAC=02:00:00:00:01:fe BMAC=02:00:00:00:02:fe
//
// The defaults number the two sides as the namespace test does
// (crates/cli/tests/nat64.rs): side A 2001:db8:1::/64, side B
// 10.202.2.0/24; the router is 2001:db8:1::fe and 10.202.2.254. IPv6
// hosts route the prefix through it (`ip -6 route add 64:ff9b::/96 via
// 2001:db8:1::fe`); IPv4 hosts need no route (the translated packets come
// from the router's own address, on their link).
//
// Outward (A to B): IPv6 packets to 64:ff9b::/96 go to NAT64's input 0,
// which maps each IPv6 source address and port (an echo's identifier) to
// the router's IPv4 address and a port of PORTS (blocks of 512 per IPv6
// host), keeps RFC 6146's BIB and session table, and translates them to
// IPv4 (RFC 7915), routed to side B. Inward (B to A): IPv4 packets to the
// router's address go to input 1: those of a session (or, filtering
// being endpoint-independent, to a mapped port) come out IPv6 from
// 64:ff9b::<sender> to the IPv6 host and port and are routed to side A;
// ICMPv4 errors about a session become ICMPv6 errors. Sessions time out
// as RFC 6146 says (TCP 2 h 4 min established, 4 min transitory, UDP
// 5 min, ICMP 1 min). Handlers: nat.bindings, nat.sessions, nat.drops,
// nat.drop_details (see `pronto elements NAT64`).

define($A a, $B b, $AMAC 02:00:00:00:01:fe, $BMAC 02:00:00:00:02:fe,
       $A6 2001:db8:1::fe, $ANET6 2001:db8:1::/64,
       $B4 10.202.2.254, $BNET4 10.202.2.0/24,
       $PREFIX 64:ff9b::/96, $PORTS 20000-29999);

out_a :: Queue(1024) -> ToDevice($A);
out_b :: Queue(1024) -> ToDevice($B);
nds_a :: IP6NDSolicitor($A6, $AMAC) -> out_a;
arpq_b :: ARPQuerier($B4, $BMAC) -> out_b;

// Routing tables. IPv6: 0 the router, 1 side A, 2 the NAT64 prefix.
// IPv4: 0 the router's address (the NAT's pool), 1 side B.
rt6 :: LookupIP6Route($A6/128 ::0 0, $ANET6 ::0 1, $PREFIX ::0 2);
rt4 :: RadixIPLookup($B4/32 0, $BNET4 1);

nat :: NAT64(POOL $B4, PREFIX $PREFIX, PORTS $PORTS);

// Side A: IPv6 only.
FromDevice($A, PROMISC true)
    -> ca :: Classifier(12/86dd 20/3aff 54/87, 12/86dd 20/3aff 54/88, 12/86dd, -);
ca[0] -> IP6NDAdvertiser($A6/128 $AMAC) -> out_a;
ca[1] -> [1]nds_a;
ca[2] -> Strip(14) -> CheckIP6Header -> ip6_in_a :: Counter -> GetIP6Address(24) -> rt6;
ca[3] -> other_a :: Counter -> Discard;

// Side B: IPv4 only.
FromDevice($B, PROMISC true)
    -> cb :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
cb[0] -> ARPResponder($B4 $BMAC) -> out_b;
cb[1] -> [1]arpq_b;
cb[2] -> Strip(14) -> CheckIPHeader -> ip4_in_b :: Counter -> GetIPAddress(16) -> rt4;
cb[3] -> other_b :: Counter -> Discard;

// IPv6: to the router itself (counted), to side A, into the NAT.
rt6[0] -> local6 :: Counter -> Discard;
rt6[1] -> dh6_a :: DecIP6HLIM -> fwd6_a :: Counter -> [0]nds_a;
dh6_a[1] -> expired6 :: Counter -> Discard;
rt6[2] -> [0]nat;

// Outward: translated (TTL = hop limit), routed to side B, where the TTL
// is decremented (once per crossing, as inward).
nat[0] -> CheckIPHeader -> GetIPAddress(16) -> rt4;
rt4[1] -> dt4_b :: DecIPTTL -> fwd4_b :: Counter -> [0]arpq_b;
dt4_b[1] -> expired4 :: Counter -> Discard;

// Inward: IPv4 to the router's address through the NAT, routed to A.
rt4[0] -> [1]nat;
nat[1] -> CheckIP6Header -> GetIP6Address(24) -> rt6;
nat[2] -> refused :: Counter -> Discard;
