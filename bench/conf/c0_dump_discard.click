// FromDump -> Discard: reading a trace (3 M 64-byte frames).
c :: FromDump(flows.pcap, STOP true) -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
