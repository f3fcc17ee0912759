// A connection-tracking firewall as a chain NF: subscribers' connections
// (input 0 of StatefulFirewall is the inside) are tracked; malformed and
// refused packets are dropped by reason.
input -> Strip(14) -> CheckIPHeader -> fw :: StatefulFirewall(CAPACITY 65536);
Idle -> [1]fw;
fw[0] -> Unstrip(14) -> output;
fw[1] -> Discard;
