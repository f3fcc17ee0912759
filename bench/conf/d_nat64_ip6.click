c :: FromDump(nat64.pcap, STOP true) -> Strip(14) -> CheckIP6Header -> [0]nat :: NAT64(POOL 198.51.100.0/24);
Idle -> [1]nat; nat[0] -> d :: Discard; nat[1] -> Discard; nat[2] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) translated $(d.count) bindings $(nat.nbindings) sessions $(nat.nsessions));
