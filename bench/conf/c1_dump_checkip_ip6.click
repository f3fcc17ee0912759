c :: FromDump(flows6.pcap, STOP true) -> Strip(14) -> CheckIP6Header -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
