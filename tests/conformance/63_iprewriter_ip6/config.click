// IPRewriter with IPv6 patterns (pronto's own: Click's rewriters are
// IPv4-only). Input 0: source NAPT of the 2001:db8:1::/64 clients to
// 2001:db8:ffff::1, ports 1024-65535 taken in turn; input 1: destination
// NAT of the service [2001:db8::80]:80 to [2001:db8:2::5]:8080; input 2:
// replies (`pass 2`: what has no mapping leaves unchanged on output 2).
// TCP and UDP both ways with their checksums; a TCP segment behind a
// destination-options header; a zero UDP checksum left zero; an IPv4
// packet on the IPv6 pattern's input is a mapping failure; ICMPv6 and a
// later fragment get no mapping. Handlers print IPv6 flows in RFC 5952
// form.
src :: FromDump(input.pcap, STOP true);
eth :: Classifier(12/86dd, 12/0800, -);
cls :: IPClassifier(dst host 2001:db8::80, src net 2001:db8:1::/64, -);
rw :: IPRewriter(pattern 2001:db8:ffff::1 1024-65535# - - 0 1,
                 pattern - - 2001:db8:2::5 8080 0 1,
                 pass 2);
src -> eth;
eth[0] -> Strip(14) -> CheckIP6Header -> cls;
eth[1] -> Strip(14) -> CheckIPHeader -> [0]rw;
eth[2] -> Discard;
cls[0] -> [1]rw;
cls[1] -> [0]rw;
cls[2] -> [2]rw;
rw[0] -> Unstrip(14) -> ToDump(output_fwd.pcap);
rw[1] -> Unstrip(14) -> ToDump(output_rev.pcap);
rw[2] -> Unstrip(14) -> ToDump(output_pass.pcap);
DriverManager(wait, print rw.nmappings, print rw.mapping_failures, print rw.patterns,
              print rw.tcp_table, print rw.udp_table,
              print rw.tcp_lookup 2001:db8:1::a 40000 2001:db8:3::9 443);
