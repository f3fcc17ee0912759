#!/usr/bin/env python3
"""Write examples/ratelimit.pcap: one second of subscriber traffic for
examples/ratelimit.click. Three subscribers (10.1.0.1-3) send to the
Internet: subscribers 1 and 2 make a voice call each (RTP, UDP port 5004,
50 packets/s of 160-byte frames), subscriber 1 also fetches a little bulk
data, and subscriber 3 pushes bulk TCP at 200 packets/s for half a second.
Deterministic; run from the repository root."""
import struct

BASE = 1700000000


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(s):
    return bytes(int(x) for x in s.split("."))


ETH = bytes.fromhex("020000000002" "020000000001" "0800")


def ipv4(src, dst, proto, l4, ident):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident & 0xFFFF, 0x4000, 64,
                    proto, 0, ip4(src), ip4(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + l4


def l4sum(src, dst, proto, seg):
    return csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, proto, len(seg)) + seg)


def udp(src, dst, sport, dport, payload):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    return seg[:6] + struct.pack("!H", l4sum(src, dst, 17, seg) or 0xFFFF) + seg[8:]


def tcp(src, dst, sport, dport, seq, payload):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, 1, 5 << 4, 0x18, 65535, 0, 0) + payload
    return seg[:16] + struct.pack("!H", l4sum(src, dst, 6, seg)) + seg[18:]


def main():
    pkts = []  # (time in microseconds, frame)
    for sub, peer, phase in (("10.1.0.1", "198.51.100.7", 0), ("10.1.0.2", "198.51.100.8", 7000)):
        for i in range(50):
            rtp = struct.pack("!BBHII", 0x80, 0, i, i * 160, 0x1234) + bytes(148)
            f = ETH + ipv4(sub, peer, 17, udp(sub, peer, 40000, 5004, rtp), i)
            pkts.append((phase + i * 20000, f))
    for i in range(100):          # subscriber 3: 200 packets/s of 600 bytes
        src, dst = "10.1.0.3", "203.0.113.5"
        f = ETH + ipv4(src, dst, 6, tcp(src, dst, 50000, 80, 1000 + i * 546, bytes(546)), 1000 + i)
        pkts.append((100000 + i * 5000, f))
    for i in range(20):           # subscriber 1: a little bulk next to its call
        src, dst = "10.1.0.1", "203.0.113.9"
        f = ETH + ipv4(src, dst, 6, tcp(src, dst, 50001, 443, 1 + i * 546, bytes(546)), 2000 + i)
        pkts.append((300000 + i * 10000, f))
    pkts.sort(key=lambda p: p[0])
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for t, f in pkts:
        out.append(struct.pack("<IIII", BASE + t // 1000000, t % 1000000, len(f), len(f)) + f)
    with open("examples/ratelimit.pcap", "wb") as fh:
        fh.write(b"".join(out))
    print("%d packets, %d voice, %d bulk" % (len(pkts), 100, 120))


main()
