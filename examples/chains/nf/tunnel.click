// A VPN gateway's sending end as a chain NF: every IPv4 packet leaves
// inside an IP-in-IP header (protocol 4) from 192.0.2.1 to 198.51.100.1;
// anything else is dropped. vpn.click is the receiving end.
input -> Strip(14) -> CheckIPHeader -> c :: Counter
  -> IPEncap(4, 192.0.2.1, 198.51.100.1)
  -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> output;
