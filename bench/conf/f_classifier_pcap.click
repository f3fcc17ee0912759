// FromDump -> Classifier(12/0800, -).
c :: FromDump(flows.pcap, STOP true) -> cl :: Classifier(12/0800, -);
cl[0] -> Discard;
cl[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
