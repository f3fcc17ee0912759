// A load balancer as a chain NF: flows go to the server at 10.10.0.1.
input -> Strip(14) -> MarkIPHeader
  -> rw :: IPRewriter(pattern - - 10.10.0.1 - 0 0)
  -> Unstrip(14) -> output;
