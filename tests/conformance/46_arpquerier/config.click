// ARPQuerier: IP packets on input 0 (destination IP annotation from
// GetIPAddress) wait for their next hop's ARP reply on input 1; one query per
// unresolved address; 255.255.255.255 and the BROADCAST address (from the
// prefix form) go to FF-FF-FF-FF-FF-FF, multicast to 01-00-5E + low 23 bits,
// 0.0.0.0 is dropped; replies for addresses nobody waits for are learned.
// aq1 has two outputs (queries on output 1). Handlers queries, responses,
// count (entries, resolved or not), length, drops.
src :: FromDump(input.pcap, STOP true);
c :: Classifier(12/0806 20/0002, 12/0800);
src -> c;
aq :: ARPQuerier(10.0.0.1/24, 02:00:00:00:00:01);
aq1 :: ARPQuerier(10.0.0.1, 02:00:00:00:00:01);
ipin :: Strip(14) -> CheckIPHeader -> GetIPAddress(16) -> t :: Tee;
c[1] -> ipin;
c[0] -> rt :: Tee;
t[0] -> [0]aq; rt[0] -> [1]aq;
t[1] -> [0]aq1; rt[1] -> [1]aq1;
aq -> ToDump(output_out.pcap);
aq1[0] -> ToDump(output_out1.pcap);
aq1[1] -> ToDump(output_queries1.pcap);
DriverManager(wait, print aq.queries, print aq.responses, print aq.count, print aq.length,
              print aq.drops, print aq1.queries, print aq1.responses, print aq1.count,
              print aq1.length, print aq1.drops);
