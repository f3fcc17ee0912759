// ICMPRewriter with IPv6 flows (pronto's own: Click's rewriters are
// IPv4-only). The inside hosts' UDP and TCP leave through an IPRewriter
// source NAPT, their pings through an ICMPPingRewriter, both from
// 2001:db8:ffff::1; ICMPv6 errors coming back about those flows
// (destination unreachable, packet too big, time exceeded, parameter
// problem) are rewritten back to the inside host: embedded addresses,
// ports or echo identifier, the embedded checksum where quoted, the outer
// destination when it is the flow's address, and the ICMPv6 checksum over
// the pseudo-header. Errors about unknown flows, non-errors, quotes cut
// inside their header and fragmented errors are dropped.
src :: FromDump(input.pcap, STOP true);
eth :: Classifier(12/86dd, -);
dir :: IPClassifier(src net 2001:db8:1::/64, -);
kind :: Classifier(6/3a, -);
rw :: IPRewriter(pattern 2001:db8:ffff::1 1024-65535# - - 0 1);
pr :: ICMPPingRewriter(pattern 2001:db8:ffff::1 1024-65535# - - 0 1);
ir :: ICMPRewriter(rw pr);
out :: ToDump(output_out.pcap);
src -> eth;
eth[0] -> Strip(14) -> CheckIP6Header -> dir;
eth[1] -> Discard;
dir[0] -> kind;
dir[1] -> ir;
kind[0] -> pr;
kind[1] -> rw;
rw[0] -> Unstrip(14) -> out;
pr[0] -> Unstrip(14) -> out;
rw[1] -> Discard;
pr[1] -> Discard;
ir -> Unstrip(14) -> ToDump(output_icmp.pcap);
DriverManager(wait, print rw.nmappings, print pr.table_size);
