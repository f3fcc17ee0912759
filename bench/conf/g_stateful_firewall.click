// The stateful firewall over TCP and UDP sessions in both directions
// (bench/gen_stateful.py): inside hosts 10.0.0.0/8 on the trusted input.
c :: FromDump(sessions.pcap, STOP true) -> Strip(14) -> CheckIPHeader
  -> side :: IPClassifier(src net 10.0.0.0/8, -);
fw :: StatefulFirewall;
side[0] -> [0]fw; side[1] -> [1]fw;
fw[0] -> d :: Discard; fw[1] -> d;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) passed $(d.count));
