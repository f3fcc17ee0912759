// A carrier-grade NAT as a chain NF: the BRAS pool 10.64.0.0/16 leaves
// from 198.51.100.4/30 in port blocks per subscriber.
input -> Strip(14) -> CheckIPHeader -> [0]nat :: CGNAT(EXTERNAL 198.51.100.4/30, INTERNAL 10.64.0.0/16);
Idle -> [1]nat;
nat[0] -> Unstrip(14) -> output;
nat[1] -> Discard;
