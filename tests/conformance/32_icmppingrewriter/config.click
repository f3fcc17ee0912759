// Ping NAT: ICMPPingRewriter rewrites inside echo requests to 10.0.0.1 with identifiers
// from 1024 (sequential); echo replies to them come back on output 1; unexpected replies,
// other ICMP types and other protocols are dropped (pr has two inputs and two outputs).
src :: FromDump(input.pcap, STOP true);
dir :: IPClassifier(src net 192.168.0.0/16, -);
pr :: ICMPPingRewriter(pattern 10.0.0.1 1024-65535# - - 0 1, drop);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]pr;
dir[1] -> [1]pr;
pr[0] -> Unstrip(14) -> ToDump(output_out.pcap);
pr[1] -> Unstrip(14) -> ToDump(output_in.pcap);
DriverManager(wait, print pr.table_size, print pr.patterns, print pr.table);
