// ICMPPingRewriter with an IPv6 pattern (pronto's own: Click's is
// IPv4-only). Echo requests of the 2001:db8:1::/64 hosts leave from
// 2001:db8:ffff::1 with identifiers from 1024 (sequential); echo replies
// to them come back on input 1 and leave on output 1 with the host's
// address and identifier. ICMPv6 checksums cover the pseudo-header;
// echoes behind extension headers are mapped; unexpected replies, other
// ICMPv6 types, UDP and a later fragment get no mapping (dropped); an
// IPv4 echo on the IPv6 pattern's input is a mapping failure.
src :: FromDump(input.pcap, STOP true);
eth :: Classifier(12/86dd, 12/0800, -);
dir :: IPClassifier(src net 2001:db8:1::/64, -);
pr :: ICMPPingRewriter(pattern 2001:db8:ffff::1 1024-65535# - - 0 1, drop);
src -> eth;
eth[0] -> Strip(14) -> CheckIP6Header -> dir;
eth[1] -> Strip(14) -> CheckIPHeader -> [0]pr;
eth[2] -> Discard;
dir[0] -> [0]pr;
dir[1] -> [1]pr;
pr[0] -> Unstrip(14) -> ToDump(output_out.pcap);
pr[1] -> Unstrip(14) -> ToDump(output_in.pcap);
DriverManager(wait, print pr.table_size, print pr.mapping_failures, print pr.patterns,
              print pr.table);
