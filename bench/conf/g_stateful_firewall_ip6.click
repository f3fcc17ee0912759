// The IPv6 twin of g_stateful_firewall (sessions6.pcap): inside hosts
// fd00::/8 on the trusted input.
c :: FromDump(sessions6.pcap, STOP true) -> Strip(14) -> CheckIP6Header
  -> side :: IPClassifier(src net fd00::/8, -);
fw :: StatefulFirewall;
side[0] -> [0]fw; side[1] -> [1]fw;
fw[0] -> d :: Discard; fw[1] -> d;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) passed $(d.count));
