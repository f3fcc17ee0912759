// Stateful NAT64 (RFC 6146) and NPTv6 (RFC 6296). The IPv6 host
// 2001:db8:aaaa::7 reaches 203.0.113.9 at 64:ff9b::cb00:7109 through NAT64
// (one pool address, blocks of 16 ports): a TCP SYN out and the SYN-ACK
// back, UDP both ways, an ICMPv6 echo and its reply, an ICMPv4 port
// unreachable about the UDP flow translated back to ICMPv6; dropped: IPv4
// to an unmapped port, a TCP ACK without a session, IPv6 outside the
// prefix. NPTv6 maps fd01:203:405::/48 to 2001:db8:1::/48 (the RFC's
// example, a 0xFFFF result written as 0, subnet 0xFFFF dropped).
// Expected outputs computed by make.py with scapy.
src :: FromDump(input.pcap, STOP true);
c :: Classifier(12/0800, 12/86dd);
src -> c;
nat :: NAT64(POOL 198.51.100.1/32, PORTS 1024-2047, BLOCK_SIZE 16);
npt :: NPTv6(INTERNAL fd01:203:405::/48, EXTERNAL 2001:db8:1::/48);
c[0] -> Strip(14) -> CheckIPHeader -> [1]nat;
c[1] -> Strip(14) -> CheckIP6Header
     -> s :: IPClassifier(src net 2001:db8:aaaa::/64, src net fd01:203:405::/48, dst net 2001:db8:1::/48, -);
s[0] -> [0]nat;
s[1] -> [0]npt;
s[2] -> [1]npt;
s[3] -> Discard;
nat[0] -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_nat4.pcap);
nat[1] -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_nat6.pcap);
nat[2] -> Discard;
npt[0] -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_nptout.pcap);
npt[1] -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump(output_nptin.pcap);
npt[2] -> Discard;
DriverManager(wait, print nat.outbound, print nat.inbound, print nat.icmp_errors,
  print nat.no_mapping_drops, print nat.not_syn_drops, print nat.not_prefix_drops,
  print nat.nbindings, print nat.nsessions, print $(nat.bindings),
  print npt.outbound, print npt.inbound, print npt.passed, print npt.drops);
