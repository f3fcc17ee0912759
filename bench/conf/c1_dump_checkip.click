// FromDump -> Strip -> CheckIPHeader -> Discard.
c :: FromDump(flows.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
