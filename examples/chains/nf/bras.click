// The subscriber edge's BRAS as a chain NF: PPPoE session frames from
// subscribers leave decapsulated, as Ethernet/IPv4, their source checked
// against the session's address. A chain NF has one way out, so the
// replies to subscribers (discovery, PPP control) are counted and dropped
// here: examples/bras.click is the BRAS with both of its sides.
input -> b :: PPPoEServer(MAC 02:00:00:00:01:fe, SUBSCRIBERS examples/bras-subscribers.txt,
                          POOL 10.64.0.0/16, LOCAL 10.64.0.1);
Idle -> [1]b;
b[0] -> replies :: Counter -> Discard;
b[1] -> EtherEncap(0x0800, 02:00:00:00:01:fe, 02:00:00:00:02:fe) -> output;
