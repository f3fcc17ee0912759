// A source NAT (NAPT) as a chain NF: flows leave from 192.0.2.1.
input -> Strip(14) -> MarkIPHeader
  -> rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 0)
  -> Unstrip(14) -> output;
