/// `c_firewall`'s rules (the shared benchmark's `bench/conf/c_firewall.click`),
/// for the classify bench and the crate's tests (`include!`d by both).
const C_FIREWALL: &[&str] = &[
    "allow src net 10.0.0.0/16 and tcp dst port 22",
    "deny tcp dst port 22",
    "allow tcp dst port 80 or tcp dst port 443 or tcp dst port 8080",
    "allow udp dst port 53 and dst net 8.0.0.0/8",
    "deny udp dst port 53",
    "allow udp dst port 123",
    "deny dst net 1.0.0.0/8 or dst net 2.0.0.0/8",
    "allow tcp dst port 25 and src net 10.128.0.0/9",
    "allow udp and dst port > 5000",
    "allow icmp",
    "deny all",
];
