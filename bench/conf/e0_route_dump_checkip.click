// route.pcap -> Strip -> CheckIPHeader -> GetIPAddress -> Discard.
c :: FromDump(route.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> GetIPAddress(16) -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
