c :: FromDump(flows.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> [0]nat :: CGNAT(EXTERNAL 198.51.100.0/24, INTERNAL 10.0.0.0/8);
Idle -> [1]nat; nat[0] -> d :: Discard; nat[1] -> Discard; nat[2] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) translated $(d.count) mappings $(nat.nmappings));
