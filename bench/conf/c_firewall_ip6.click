c :: FromDump(flows6.pcap, STOP true) -> Strip(14) -> CheckIP6Header -> IPFilter(allow src net fd00::/24 and tcp dst port 22,
 deny tcp dst port 22,
 allow tcp dst port 80 or tcp dst port 443 or tcp dst port 8080,
 allow udp dst port 53 and dst net 2800::/8,
 deny udp dst port 53,
 allow udp dst port 123,
 deny dst net 2100::/8 or dst net 2200::/8,
 allow tcp dst port 25 and src net fd00:8000::/17,
 allow udp and dst port > 5000,
 allow icmp6,
 deny all) -> d :: Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a) allowed $(d.count));
