c :: FromDump(flows6.pcap, STOP true) -> Strip(14) -> CheckIP6Header -> rw :: IPRewriter(pattern 2001:db8::1 1024-65535 - - 0 1);
rw[0] -> d :: Discard; rw[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) translated $(d.count) mappings $(rw.nmappings));
