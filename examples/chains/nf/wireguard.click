// A VPN gateway's tunnel end as a chain NF, with the WireGuard element in
// place of the hand-written IP-in-IP tunnel (vpn.click): the tunnel's UDP
// packets for 192.0.2.1:51820 are decrypted (keys and peers from
// examples/wireguard.conf, named from the repository root, where the
// examples run) and leave as plain frames; anything else, and
// what the gateway would send back to its peers (handshake responses,
// keep-alives: a one-way NF has nowhere to send them), is counted and
// dropped.
input -> Strip(14) -> CheckIPHeader
  -> t :: IPClassifier(dst host 192.0.2.1 and udp dst port 51820, -);
wg :: WireGuard(CONFIG examples/wireguard.conf, ADDRESS 192.0.2.1, PORT 51820);
t[0] -> [1]wg;
t[1] -> not_tunnel :: Counter -> Discard;
Idle -> [0]wg;
wg[0] -> to_peers :: Counter -> Discard;
wg[1] -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> output;
