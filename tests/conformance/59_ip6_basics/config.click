// IPv6 basics: CheckIP6Header (BADADDRS, bad packets to output 1, padding
// trimmed), IP6Print, DecIP6HLIM with ICMP6Error time exceeded (not about
// ICMPv6 errors, multicast destinations, unspecified or multicast sources),
// SetIP6DSCP, IP6Fragmenter at 1280 and 200 (packets it cannot fragment to
// ICMP6Error packet too big), IP6Mirror, GetIP6Address, IP6Encap(DST_ANNO),
// MarkIP6Header + SetIP6Address + IP6Encap, IP6Drop.
src :: FromDump(input.pcap, STOP true);
c :: Classifier(12/86dd, -);
chk :: CheckIP6Header(2001:db8::bad);
t :: Tee(5);
src -> c;
c[1] -> Discard;
c[0] -> Strip(14) -> chk -> IP6Print(in) -> t;
chk[1] -> Unstrip(14) -> ToDump(output_bad.pcap);

// Forwarding: hop limit, DSCP, fragmentation at 1280.
t[0] -> dec :: DecIP6HLIM -> SetIP6DSCP(46) -> frag :: IP6Fragmenter(1280)
     -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_forward.pcap);
dec[1] -> te :: ICMP6Error(2001:db8::ff, 3, 0) -> SetTimestamp(1600000000)
     -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_hlim.pcap);

// Mirrored and tunnelled back to the sender.
t[1] -> IP6Mirror -> GetIP6Address(24) -> IP6Encap(41, 2001:db8:ffff::1, DST_ANNO, HLIM 64, CLASS 32)
     -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_tunnel.pcap);

// A small MTU: packets it cannot fragment get Packet Too Big.
t[2] -> small :: IP6Fragmenter(200)
     -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_frag200.pcap);
small[1] -> ptb :: ICMP6Error(2001:db8::ff, 2, 0, PMTU 200) -> SetTimestamp(1600000000)
     -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_toobig.pcap);

// Re-marked and encapsulated towards a fixed annotation.
t[3] -> MarkIP6Header -> SetIP6Address(2001:db8:eeee::1) -> IP6Encap(41, 2001:db8:ffff::2, DST_ANNO)
     -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_encap.pcap);

// FastClick's IP6Drop, deterministic: packets 1 to 4 of every 100 dropped.
t[4] -> drop :: IP6Drop(DETERMINISTIC true, UDROPRATE 0.04)
     -> EtherEncap(0x86dd, 02:00:00:00:00:0a, 02:00:00:00:00:0b) -> ToDump(output_drop.pcap);

DriverManager(wait, print chk.drops, print chk.count, print dec.drops, print te.drops,
              print frag.fragments, print frag.drops, print small.fragments, print small.drops,
              print ptb.drops, print drop.drops, print drop.count);
