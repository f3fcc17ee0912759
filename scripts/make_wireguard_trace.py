#!/usr/bin/env python3
"""Write examples/wireguard.pcap: the plain side of a WireGuard tunnel, for
examples/wireguard-tunnel.click. A captured tunnel could not be replayed
(each handshake draws its ephemeral keys from the OS, so the transport keys
differ every run); this trace is what the hosts on the gateway's IN side
(10.202.2.0/24, fd00:202:2::/64) and the road warrior (10.99.0.2, fd99::2)
send into the tunnel, and the example seals and opens it live.

Frame by frame (the comments below number them): a ping from the IN side
that makes the gateway start the handshake, and its reply; DNS over UDP; a
TCP exchange from the road warrior to a web server with its teardown; IPv6
ping and UDP; packets of exactly the tunnel MTU (1,420 bytes) both ways and
one of 1,421 (too long); a packet for an address no peer holds; one the
road warrior sends from an address outside its AllowedIPs; the packet whose
sealed copy the example duplicates (the only one the gateway seals to 180
bytes); then, after the example's `rekey` at 1 s, traffic on the new
session. Timestamps: 10 ms apart from 1700000000.0, the second part from
1.5 s on (the example replays with TIMING). Run from the repository root."""
import struct
import tracelib
from tracelib import icmp, icmp6, tcp, udp, udp6

SYN, ACK, FIN, PSH = 0x02, 0x10, 0x01, 0x08
MTU = 1420
# Ethernet: the IN side's hosts send to the gateway's IN MAC; the road
# warrior's frames are as its own stack hands them to its wg interface.
ETH_IN = bytes.fromhex("0200000002fe" "020000000201")
ETH_RW = bytes.fromhex("0200000099fe" "020000009902")

RW, RW6 = "10.99.0.2", "fd99::2"
WEB, DNS, HOST = "10.202.2.3", "10.202.2.2", "10.202.2.1"
HOST6 = "fd00:202:2::10"

frames = []  # (seconds after the start, frame)


def add(t, side, ipbytes):
    eth = side + (b"\x08\x00" if ipbytes[0] >> 4 == 4 else b"\x86\xdd")
    f = eth + ipbytes
    frames.append((t, f + b"\0" * max(0, 60 - len(f))))


def fill(n):
    """n bytes of a repeating, recognisable pattern."""
    return (b"pronto-wireguard-" * (n // 17 + 1))[:n]


def ping(src, dst, typ, seq, n=56):
    return icmp(src, dst, typ, 0, struct.pack("!HH", 0x5747, seq), fill(n))


def ping6(src, dst, typ, seq, n=56):
    return icmp6(src, dst, typ, 0, struct.pack("!HH", 0x5747, seq), fill(n))


t = 0.0


def at():
    global t
    t += 0.01
    return t - 0.01


# 0-1: a ping from the IN side (no session yet: the gateway starts the
# handshake and sends the ping once it completes), and the reply.
add(at(), ETH_IN, ping(HOST, RW, 8, 1))
add(at(), ETH_RW, ping(RW, HOST, 0, 1))
# 2-3: DNS from the road warrior, and the answer.
add(at(), ETH_RW, udp(RW, 5353, DNS, 53, b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
                      b"\x03www\x07example\x00\x00\x01\x00\x01"))
add(at(), ETH_IN, udp(DNS, 53, RW, 5353, b"\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00"
                      b"\x03www\x07example\x00\x00\x01\x00\x01"
                      b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\x0a\xca\x02\x03"))
# 4-11: a TCP exchange, the road warrior the client: handshake, request,
# response, teardown (the bare ACKs are padded to 60 bytes on the wire).
req = b"GET / HTTP/1.1\r\nHost: web\r\n\r\n"
resp = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
add(at(), ETH_RW, tcp(RW, 40000, WEB, 80, SYN, 100))
add(at(), ETH_IN, tcp(WEB, 80, RW, 40000, SYN | ACK, 500, 101))
add(at(), ETH_RW, tcp(RW, 40000, WEB, 80, ACK, 101, 501))
add(at(), ETH_RW, tcp(RW, 40000, WEB, 80, PSH | ACK, 101, 501, req))
add(at(), ETH_IN, tcp(WEB, 80, RW, 40000, PSH | ACK, 501, 101 + len(req), resp))
add(at(), ETH_RW, tcp(RW, 40000, WEB, 80, FIN | ACK, 101 + len(req), 501 + len(resp)))
add(at(), ETH_IN, tcp(WEB, 80, RW, 40000, FIN | ACK, 501 + len(resp), 102 + len(req)))
add(at(), ETH_RW, tcp(RW, 40000, WEB, 80, ACK, 102 + len(req), 502 + len(resp)))
# 12-14: IPv6: a ping from the road warrior and its reply; UDP from the IN
# side.
add(at(), ETH_RW, ping6(RW6, HOST6, 128, 1))
add(at(), ETH_IN, ping6(HOST6, RW6, 129, 1))
add(at(), ETH_IN, udp6(HOST6, 4000, RW6, 4001, fill(30)))
# 15-18: exactly the tunnel MTU, both ways and both families; then one
# byte more from the IN side (the gateway drops it: too_long).
add(at(), ETH_IN, udp(HOST, 9000, RW, 9001, fill(MTU - 28)))
add(at(), ETH_RW, udp(RW, 9001, HOST, 9000, fill(MTU - 28)))
add(at(), ETH_RW, udp6(RW6, 9001, HOST6, 9000, fill(MTU - 48)))
add(at(), ETH_IN, udp(HOST, 9000, RW, 9001, fill(MTU - 27)))
# 19: for an address no peer holds (the gateway: no_peer).
add(at(), ETH_IN, udp(HOST, 9000, "10.99.0.9", 9001, fill(20)))
# 20: the road warrior sends from 10.99.0.3, outside its AllowedIPs: its
# own end seals it (it routes everything to the gateway), the gateway
# opens it and drops it (bad_source).
add(at(), ETH_RW, udp("10.99.0.3", 9001, HOST, 9000, fill(20)))
# 21: 120 bytes, sealed to 180 (outer IPv4/UDP 28, WireGuard 32; boringtun
# does not pad the plain packet to 16 bytes): the example duplicates this
# sealed packet on the wire; the road warrior's replay window drops the
# copy.
add(at(), ETH_IN, udp(HOST, 9000, RW, 9001, fill(120 - 28)))

# After the rekey (the example writes gw.rekey at 1 s): 22-25, a ping each
# way over the new session, IPv4 and IPv6.
t = 1.5
add(at(), ETH_IN, ping(HOST, RW, 8, 2))
add(at(), ETH_RW, ping(RW, HOST, 0, 2))
add(at(), ETH_RW, ping6(RW6, HOST6, 128, 2))
add(at(), ETH_IN, ping6(HOST6, RW6, 129, 2))


def sealed(ipbytes):
    """The length of the IPv4/UDP packet that carries ipbytes sealed."""
    return 28 + 32 + len(ipbytes)


def ip_len(f):
    if f[12:14] == b"\x08\x00":
        return struct.unpack("!H", f[16:18])[0]
    return 40 + struct.unpack("!H", f[18:20])[0]


# Frame 21 must be the only packet the gateway seals to 180 bytes.
assert [k for k, (_, f) in enumerate(frames)
        if f[6:12] == ETH_IN[6:12] and sealed(f[14:14 + ip_len(f)]) == 180] == [21]

with open("examples/wireguard.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for ts, fr in frames:
        us = round(ts * 1e6)
        f.write(struct.pack("<IIII", 1700000000 + us // 1000000, us % 1000000, len(fr), len(fr)))
        f.write(fr)
print(f"wrote examples/wireguard.pcap: {len(frames)} frames")
