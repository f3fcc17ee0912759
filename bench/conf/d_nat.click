// FromDump -> Strip -> CheckIPHeader -> IPRewriter (source NAPT).
c :: FromDump(flows.pcap, STOP true) -> Strip(14) -> CheckIPHeader
  -> rw :: IPRewriter(pattern 1.0.0.1 1024-65535# - - 0 1, drop);
Idle -> [1]rw;
rw[0] -> Discard;
rw[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
