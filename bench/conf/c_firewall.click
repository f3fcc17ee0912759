// FromDump -> Strip -> CheckIPHeader -> IPFilter (11 rules + default deny).
c :: FromDump(flows.pcap, STOP true) -> Strip(14) -> CheckIPHeader
  -> fw :: IPFilter(deny src net 0.0.0.0/8 or src net 127.0.0.0/8,
               1 ip frag,
               allow tcp dst port 80 and dst net 93.184.0.0/16,
               allow tcp dst port 443,
               deny tcp dst port 22 and not src net 10.0.0.0/23,
               allow tcp dst port 22,
               allow udp dst port 53 and dst net 8.8.0.0/16,
               allow udp dst port 123,
               allow icmp type echo or icmp type echo-reply,
               deny udp dst port 161,
               allow src net 192.168.1.0/24 and tcp,
               deny all);
fw[0] -> Discard;
fw[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
