// A VPN gateway's tunnel end as a chain NF: IP-in-IP packets (protocol 4)
// lose their outer header and leave as plain frames; anything else is
// dropped.
input -> Strip(14) -> CheckIPHeader -> t :: IPClassifier(ip proto 4, -);
t[0] -> StripIPHeader -> CheckIPHeader
  -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> output;
t[1] -> Discard;
