#!/usr/bin/env python3
"""Write examples/router.pcap: what both interfaces of a two-interface IP
router received, as one trace, for examples/router.click.

The router's eth0 (10.0.0.1/24, MAC 02:00:0a:00:00:01) faces host 10.0.0.5
and next hop 10.0.0.2; eth1 (10.0.1.1/24, MAC 02:00:0a:00:01:01) faces host
10.0.1.7 and next hop 10.0.1.2. Stations on eth0's segment have MACs
02:00:0a:00:00:xx and those on eth1's 02:00:0a:00:01:xx, so a frame's
source MAC says which interface received it (broadcasts included).

The routes used (examples/router-routes.txt, also the first lines of
scripts/make_bgp_table.py's table): 198.51.100.0/24 via 10.0.0.2 (eth0),
203.0.113.0/24 via 10.0.1.2 (eth1), 203.0.113.128/25 via 10.0.0.2 (eth0).

In order: ARP queries for the router's addresses (and one for another
host), forwarded UDP that waits for the next hop's ARP reply, the replies
(from next hops and hosts), TTL 2 and TTL 1 packets, 1600-byte packets with
and without DF, Record Route options (good and malformed), an Ethernet
broadcast, a bad IP checksum, a packet sent back out the interface it came
in on (ICMP redirect), packets for the router itself and its directed
broadcast, a destination with no route, and an IPv6 frame.

Deterministic; run from the repository root:
    python3 scripts/make_router_trace.py [OUT.pcap]"""
import struct
import sys

BASE = 1700000000
R0, R1 = "02:00:0a:00:00:01", "02:00:0a:00:01:01"
MACS = {"10.0.0.1": R0, "10.0.1.1": R1, "10.0.0.2": "02:00:0a:00:00:02",
        "10.0.0.5": "02:00:0a:00:00:05", "10.0.1.2": "02:00:0a:00:01:02",
        "10.0.1.7": "02:00:0a:00:01:07"}
BCAST = "ff:ff:ff:ff:ff:ff"


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ipv4(src, dst, l4, ident, ttl=64, df=False, opts=b"", proto=17, bad_sum=False):
    h = struct.pack("!BBHHHBBH4s4s", 0x45 + len(opts) // 4, 0, 20 + len(opts) + len(l4),
                    ident, 0x4000 if df else 0, ttl, proto, 0, ip4(src), ip4(dst)) + opts
    s = csum(h) ^ (0x1111 if bad_sum else 0)
    return h[:10] + struct.pack("!H", s) + h[12:] + l4


def udp(src, dst, sport, dport, payload):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ph = ip4(src) + ip4(dst) + struct.pack("!BBH", 0, 17, len(seg))
    return seg[:6] + struct.pack("!H", csum(ph + seg) or 0xFFFF) + seg[8:]


def eth(dst, src, etype, payload):
    f = mac(dst) + mac(src) + struct.pack("!H", etype) + payload
    return f + b"\0" * max(0, 60 - len(f))


def arp(op, sha, spa, tha, tpa):
    return struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, mac(sha), ip4(spa),
                       mac(tha), ip4(tpa))


def query(who, target):
    return eth(BCAST, MACS[who], 0x0806, arp(1, MACS[who], who, "00:00:00:00:00:00", target))


def reply(who, to):
    return eth(MACS[to], MACS[who], 0x0806, arp(2, MACS[who], who, MACS[to], to))


def pay(n, seed):
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


def frames():
    f = []
    n = [0]

    def ip(src, dst, size=32, via=None, ldst=None, **kw):
        """A UDP packet from src (through its segment's router interface) to dst."""
        n[0] += 1
        router = R0 if src.startswith("10.0.0.") else R1
        sender = MACS.get(via or src)
        body = ipv4(src, dst, udp(src, dst, 5000 + n[0], 9, pay(size, n[0])), 0x100 + n[0], **kw)
        f.append(eth(ldst or router, sender, 0x0800, body))

    f.append(query("10.0.0.5", "10.0.0.1"))          # ARP for eth0: answered
    f.append(query("10.0.1.7", "10.0.1.1"))          # ARP for eth1: answered
    f.append(query("10.0.0.5", "10.0.0.9"))          # ARP for another host: ignored
    ip("10.0.0.5", "203.0.113.10")                   # via 10.0.1.2: query, waits
    ip("10.0.0.5", "203.0.113.11", 100)              # waits too (one query)
    f.append(reply("10.0.1.2", "10.0.1.1"))          # both released
    ip("10.0.1.7", "198.51.100.20")                  # via 10.0.0.2: query, waits
    f.append(reply("10.0.0.2", "10.0.0.1"))          # released
    ip("10.0.0.5", "203.0.113.12", ttl=2)            # forwarded with TTL 1
    ip("10.0.0.5", "203.0.113.13", ttl=1)            # time exceeded to 10.0.0.5: query
    f.append(reply("10.0.0.5", "10.0.0.1"))          # releases the ICMP error
    ip("10.0.1.7", "198.51.100.21", ttl=1)           # time exceeded to 10.0.1.7: query
    f.append(reply("10.0.1.7", "10.0.1.1"))          # releases it
    ip("10.0.0.5", "203.0.113.14", 1572)             # 1600 bytes: two fragments
    ip("10.0.1.7", "198.51.100.22", 1572, df=True)   # DF: needfrag to 10.0.1.7
    rr = bytes([7, 11, 4]) + bytes(9)                # Record Route, 2 slots, + EOL
    ip("10.0.0.5", "203.0.113.15", opts=rr)          # gets 10.0.1.1 recorded
    bad = bytes([7, 11, 2]) + bytes(9)               # pointer 2: malformed
    ip("10.0.1.7", "198.51.100.23", opts=bad)        # parameter problem, pointer 22
    ip("10.0.0.5", "203.0.113.16", ldst=BCAST)       # link broadcast: dropped
    ip("10.0.1.7", "198.51.100.24", bad_sum=True)    # bad checksum: dropped
    ip("10.0.0.5", "198.51.100.25")                  # back out eth0: redirect + forwarded
    ip("10.0.0.5", "203.0.113.200")                  # /25 via 10.0.0.2: redirect too
    ip("10.0.0.5", "10.0.0.1")                       # for the router
    ip("10.0.1.7", "10.0.1.255")                     # directed broadcast: local
    ip("10.0.0.5", "10.0.1.7")                       # connected net: to the host
    ip("10.0.1.7", "192.0.2.1")                      # no route: dropped
    v6 = struct.pack("!IHBB16s16s", 0x60000000, 0, 59, 64, bytes(16), bytes(16))
    f.append(eth(R1, MACS["10.0.1.7"], 0x86DD, v6))  # IPv6: other
    return f


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "examples/router.pcap"
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, fr in enumerate(frames()):
        out.append(struct.pack("<IIII", BASE + i // 1000, (i % 1000) * 1000, len(fr), len(fr)) + fr)
    with open(path, "wb") as fh:
        fh.write(b"".join(out))


main()
