// A WireGuard gateway between two Ethernet interfaces: peers on the OUT
// side reach the IN side's network through an encrypted tunnel that
// pronto terminates (the real peer is `wireguard-go` or the kernel's
// WireGuard, configured with `wg`). Plain traffic enters and leaves as
// ordinary IP packets, so a firewall or NAT can sit on either side.
//
//   pronto run examples/wireguard.click OUT=eth0 IN=eth1 \
//       OUTMAC=02:00:00:00:01:fe INMAC=02:00:00:00:02:fe
//
// The defaults number the sides as the namespace test does
// (crates/cli/tests/wireguard.rs): OUT 10.202.1.0/24, where the peers'
// UDP packets arrive for 10.202.1.254:51820; IN 10.202.2.0/24, the
// gateway .254. Keys and peers come from $KEYS (examples/wireguard.conf:
// demo keys, make your own). The inner addresses a peer may use are its
// AllowedIPs; hosts on the IN side route them through 10.202.2.254.
//
// OUT: ARP answered and resolved; IPv4 UDP for our address and port goes
// to the gateway's input 1, everything else is counted and dropped. IN:
// IPv4 goes to input 0 and is encrypted for the peer whose AllowedIPs
// hold its destination (none: counted, `no_peer`). Decrypted packets
// leave toward their destination on IN. A ControlSocket on $CTL answers
// `READ wg.peers` and `WRITE wg.rekey`.
//
// Without devices or a real peer: examples/wireguard-tunnel.click runs this
// gateway and its road warrior (examples/wireguard-peer.conf) back to back
// on a bundled plain trace (examples/wireguard.pcap), and
// crates/cli/tests/example_wireguard.rs checks it byte for byte.

define($OUT out, $IN in, $OUTMAC 02:00:00:00:01:fe, $INMAC 02:00:00:00:02:fe,
       $OUT4 10.202.1.254, $IN4 10.202.2.254, $PORT 51820,
       $KEYS examples/wireguard.conf, $CTL /tmp/pronto-wireguard.sock);

wg :: WireGuard(CONFIG $KEYS, ADDRESS $OUT4, PORT $PORT, MTU 1420);
ControlSocket(UNIX, $CTL);

// Up to 32 packets per task run on every device (the default is one): a
// send call per batch, and the element encrypts and decrypts whole batches.
out_o :: Queue(1024) -> ToDevice($OUT, BURST 32);
out_i :: Queue(1024) -> ToDevice($IN, BURST 32);
arpq_o :: ARPQuerier($OUT4, $OUTMAC) -> out_o;
arpq_i :: ARPQuerier($IN4, $INMAC) -> out_i;

// OUT side: the tunnel's UDP packets.
FromDevice($OUT, PROMISC true, METHOD RING, BURST 32)
    -> co :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
co[0] -> ARPResponder($OUT4 $OUTMAC) -> out_o;
co[1] -> [1]arpq_o;
co[2] -> Strip(14) -> CheckIPHeader
      -> tunnel :: IPClassifier(dst host $OUT4 and udp dst port $PORT, -);
co[3] -> other_o :: Counter -> Discard;
tunnel[0] -> [1]wg;
tunnel[1] -> not_tunnel :: Counter -> Discard;

// IN side: plain packets to encrypt.
FromDevice($IN, PROMISC true, METHOD RING, BURST 32)
    -> ci :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
ci[0] -> ARPResponder($IN4 $INMAC) -> out_i;
ci[1] -> [1]arpq_i;
ci[2] -> Strip(14) -> CheckIPHeader -> plain_in :: Counter -> [0]wg;
ci[3] -> other_i :: Counter -> Discard;

// Encrypted packets (and the gateway's own handshakes and keep-alives)
// to the peers' endpoints; decrypted packets to their destinations.
wg[0] -> sealed :: Counter -> [0]arpq_o;
wg[1] -> CheckIPHeader -> GetIPAddress(16) -> opened :: Counter -> [0]arpq_i;
