// A stateless firewall as a chain NF (a compound element body): telnet
// and one spoofed /16 are dropped, everything else passes.
input -> c :: Counter
  -> Strip(14) -> CheckIPHeader
  -> f :: IPFilter(deny dst port 23, deny src net 10.66.0.0/16, allow all)
  -> Unstrip(14) -> output;
