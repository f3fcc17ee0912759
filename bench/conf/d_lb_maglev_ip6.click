mg :: MaglevIPMapper(b1 - - 2001:db8:1::1 80 0 1, b2 - - 2001:db8:1::2 80 0 1, b3 - - 2001:db8:1::3 80 0 1, b4 - - 2001:db8:1::4 80 0 1);
c :: FromDump(flows6.pcap, STOP true) -> Strip(14) -> CheckIP6Header -> rw :: IPRewriter(mg);
rw[0] -> d :: Discard; rw[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) translated $(d.count) mappings $(rw.nmappings));
