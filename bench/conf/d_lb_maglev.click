mg :: MaglevIPMapper(b1 - - 10.1.0.1 80 0 1, b2 - - 10.1.0.2 80 0 1, b3 - - 10.1.0.3 80 0 1, b4 - - 10.1.0.4 80 0 1);
c :: FromDump(flows.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> rw :: IPRewriter(mg);
rw[0] -> d :: Discard; rw[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) translated $(d.count) mappings $(rw.nmappings));
