c :: FromDump(route6.pcap, STOP true) -> Strip(14) -> CheckIP6Header -> GetIP6Address(24) -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
