// IPAddrRewriter and IPAddrPairRewriter with IPv6 patterns (pronto's own:
// Click's rewriters are IPv4-only). Basic NAT: the 2001:db8:1::/64 hosts'
// packets of any protocol leave from 2001:db8:ffff::1 or ::2 (a sequential
// range, one address per host), replies come back;
// the TCP, UDP and ICMPv6 checksums follow the pseudo-header (a zero UDP
// checksum stays zero, a first fragment is updated, a later fragment only
// has its address changed). Pair NAT: the service 2001:db8::80 is served
// by 2001:db8:2::5, the client seen as 2001:db8:ffff::20. ICMPRewriter maps
// ICMPv6 errors about both. An IPv4 packet on the IPv6 pattern is a
// mapping failure; strays on the reply input pass unchanged.
src :: FromDump(input.pcap, STOP true);
eth :: Classifier(12/86dd, 12/0800, -);
dir :: IPClassifier(src net 2001:db8:1::/64 and dst host 2001:db8::80, src net 2001:db8:1::/64,
                    dst host 2001:db8:ffff::20, -);
err :: Classifier(6/3a 40/00%80, -);
err2 :: Classifier(6/3a 40/00%80, -);
ar :: IPAddrRewriter(pattern 2001:db8:ffff::1-2001:db8:ffff::2# - 0 1, pass 1);
ap :: IPAddrPairRewriter(pattern 2001:db8:ffff::20 2001:db8:2::5 0 1, drop);
ir :: ICMPRewriter(ar ap);
out :: ToDump(output_out.pcap);
back :: ToDump(output_back.pcap);
src -> eth;
eth[0] -> Strip(14) -> CheckIP6Header -> dir;
eth[1] -> Strip(14) -> CheckIPHeader -> [0]ar;
eth[2] -> Discard;
dir[0] -> [0]ap;
dir[1] -> [0]ar;
dir[2] -> err2;
dir[3] -> err;
err[0] -> ir;
err[1] -> [1]ar;
err2[0] -> ir;
err2[1] -> [1]ap;
ap[0] -> Unstrip(14) -> out;
ar[0] -> Unstrip(14) -> out;
ap[1] -> Unstrip(14) -> back;
ar[1] -> Unstrip(14) -> back;
ir -> Unstrip(14) -> ToDump(output_icmp.pcap);
DriverManager(wait, print ar.table_size, print ar.mapping_failures, print ar.table,
              print ap.table_size, print ap.table);
