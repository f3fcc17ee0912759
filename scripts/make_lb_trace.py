#!/usr/bin/env python3
"""Write examples/lb.pcap: clients of the virtual services 192.0.2.10:80 and
[2001:db8::10]:80 and the answers of their backends (four IPv4, four
IPv6), for examples/lb.click.

Phase 1 (the first second): 24 clients open a connection each (SYN, GET)
and their backends answer (SYN-ACK, response). Phase 2 (from t = 2 s,
after the configuration drains backend web3): the same 24 connections
close (FIN and its answer), and 24 new clients connect.

Which backend answers a connection is what the load balancer will pick:
this script models examples/lb.click's MaglevIPMapper (pronto's element:
FNV-1a name hashes for each backend's offset and skip, the Maglev fill of
a 65537-slot table, the five-tuple hash that picks a slot), so the
backends' answers carry the right source address. It prints the expected
number of new flows per backend in each phase.

The IPv6 part is smaller: 8 clients in phase 1, 8 more in phase 2, timed
between the IPv4 packets (which are exactly what they were before the IPv6
part was added). Its backends fill their own Maglev table (the mapper
keeps one per family), and the drain in the middle takes v6web3 out too.

Deterministic; run from the repository root."""
import struct

BASE = 1700000000
VIP = "192.0.2.10"
LB_MAC, ROUTER_MAC = "02:00:00:00:00:0a", "02:00:00:00:00:fe"
BACKENDS = [("web1", "10.1.0.1"), ("web2", "10.1.0.2"), ("web3", "10.1.0.3"), ("web4", "10.1.0.4")]
VIP6 = "2001:db8::10"
BACKENDS6 = [("v6web%d" % i, "2001:db8:1::%d" % i) for i in range(1, 5)]
M = 65537
MASK = (1 << 64) - 1


def fnv_name_hash(name, salt):
    h = 0xCBF29CE484222325 ^ salt
    for b in name.encode():
        h ^= b
        h = (h * 0x100000001B3) & MASK
    h ^= h >> 29
    h = (h * 0xBF58476D1CE4E5B9) & MASK
    return h ^ (h >> 32)


def populate(names):
    """Maglev lookup table: slot -> backend index (None where unused)."""
    table = [None] * M
    live = [(i, fnv_name_hash(n, 0x6D61676C) % M, fnv_name_hash(n, 0x736B6970) % (M - 1) + 1)
            for i, n in enumerate(names) if n is not None]
    nxt = [0] * len(live)
    filled = 0
    while True:
        for k, (i, off, skip) in enumerate(live):
            c = (off + nxt[k] * skip) % M
            while table[c] is not None:
                nxt[k] += 1
                c = (off + nxt[k] * skip) % M
            table[c] = i
            nxt[k] += 1
            filled += 1
            if filled == M:
                return table


def rotl(v, r):
    return ((v << r) | (v >> (64 - r))) & MASK


def flow_slot(saddr, daddr, sport, dport, proto=6):
    h = 0
    for v in ((saddr << 32) | daddr, (sport << 16) | dport | (proto << 32)):
        h = ((rotl(h, 23) ^ v) * 0x9E3779B97F4A7C15) & MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return (h ^ (h >> 33)) % M


def flow_slot6(src, dst, sport, dport, proto=6):
    """The IPv6 slot: addresses as two 64-bit halves each, then the ports."""
    s, d = int.from_bytes(src, "big"), int.from_bytes(dst, "big")
    h = 0
    for v in (s >> 64, s & MASK, d >> 64, d & MASK, (sport << 16) | dport | (proto << 32)):
        h = ((rotl(h, 23) ^ v) * 0x9E3779B97F4A7C15) & MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return (h ^ (h >> 33)) % M


def ip6(s):
    import ipaddress
    return ipaddress.IPv6Address(s).packed


def frame6(dst_mac, src_mac, src, dst, sport, dport, seq, ack, flags, payload):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    pseudo = ip6(src) + ip6(dst) + struct.pack("!IxxxB", len(seg), 6)
    seg = seg[:16] + struct.pack("!H", csum(pseudo + seg)) + seg[18:]
    h = struct.pack("!IHBB16s16s", 6 << 28, len(seg), 6, 64, ip6(src), ip6(dst))
    return mac(dst_mac) + mac(src_mac) + b"\x86\xdd" + h + seg


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def u32(s):
    return struct.unpack("!I", ip4(s))[0]


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def frame(dst_mac, src_mac, src, dst, sport, dport, seq, ack, flags, payload, ident):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    seg = seg[:16] + struct.pack("!H", csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, 6, len(seg)) + seg)) + seg[18:]
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(seg), ident & 0xFFFF, 0x4000, 64, 6, 0,
                    ip4(src), ip4(dst))
    f = mac(dst_mac) + mac(src_mac) + b"\x08\x00" + h[:10] + struct.pack("!H", csum(h)) + h[12:] + seg
    return f + bytes(max(0, 60 - len(f)))


def main():
    names = [n for n, _ in BACKENDS]
    before = populate(names)
    after = populate([None if n == "web3" else n for n in names])
    pkts = []  # (microseconds, frame)
    ident = [0]

    def nid():
        ident[0] += 1
        return ident[0]

    def client(k):
        return "203.0.113.%d" % (10 + k), 40000 + 7 * k

    def backend_of(table, c, sp):
        return BACKENDS[table[flow_slot(u32(c), u32(VIP), sp, 80)]]

    def to_vip(t, c, sp, seq, ack, flags, data=b""):
        pkts.append((t, frame(LB_MAC, ROUTER_MAC, c, VIP, sp, 80, seq, ack, flags, data, nid())))

    def from_backend(t, b, c, sp, seq, ack, flags, data=b""):
        bmac = "02:00:00:01:00:0%s" % b[1][-1]
        pkts.append((t, frame(LB_MAC, bmac, b[1], c, 80, sp, seq, ack, flags, data, nid())))

    get = b"GET /index.html HTTP/1.1\r\nHost: service.example\r\n\r\n"
    body = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    flows, counts1, counts2 = [], {n: 0 for n in names}, {n: 0 for n in names}
    for k in range(24):                 # phase 1
        c, sp = client(k)
        b = backend_of(before, c, sp)
        flows.append((c, sp, b))
        counts1[b[0]] += 1
        t = 20000 * k
        to_vip(t, c, sp, 1000, 0, 0x02)
        from_backend(t + 1000, b, c, sp, 9000, 1001, 0x12)
        to_vip(t + 2000, c, sp, 1001, 9001, 0x18, get)
        from_backend(t + 3000, b, c, sp, 9001, 1001 + len(get), 0x18, body)
    for k, (c, sp, b) in enumerate(flows):   # phase 2: old connections close
        t = 2000000 + 20000 * k
        to_vip(t, c, sp, 1001 + len(get), 9001 + len(body), 0x11)
        from_backend(t + 1000, b, c, sp, 9001 + len(body), 1002 + len(get), 0x11)
    for k in range(24, 48):             # phase 2: new clients
        c, sp = client(k)
        b = backend_of(after, c, sp)
        counts2[b[0]] += 1
        t = 2000000 + 20000 * k
        to_vip(t, c, sp, 1000, 0, 0x02)
        from_backend(t + 1000, b, c, sp, 9000, 1001, 0x12)
    # IPv6: 8 clients in phase 1 (closing in phase 2), 8 new in phase 2.
    names6 = [n for n, _ in BACKENDS6]
    before6 = populate(names6)
    after6 = populate([None if n == "v6web3" else n for n in names6])
    c1_6, c2_6 = {n: 0 for n in names6}, {n: 0 for n in names6}

    def client6(k):
        return "2001:db8:ff::%x" % (0x10 + k), 50000 + 11 * k

    def backend6_of(table, c, sp):
        return BACKENDS6[table[flow_slot6(ip6(c), ip6(VIP6), sp, 80)]]

    def to_vip6(t, c, sp, seq, ack, flags, data=b""):
        pkts.append((t, frame6(LB_MAC, ROUTER_MAC, c, VIP6, sp, 80, seq, ack, flags, data)))

    def from_backend6(t, b, c, sp, seq, ack, flags, data=b""):
        bmac = "02:00:00:01:00:1%s" % b[1][-1]
        pkts.append((t, frame6(LB_MAC, bmac, b[1], c, 80, sp, seq, ack, flags, data)))

    flows6 = []
    for k in range(8):
        c, sp = client6(k)
        b = backend6_of(before6, c, sp)
        flows6.append((c, sp, b))
        c1_6[b[0]] += 1
        t = 20000 * k + 10000
        to_vip6(t, c, sp, 1000, 0, 0x02)
        from_backend6(t + 1000, b, c, sp, 9000, 1001, 0x12)
        to_vip6(t + 2000, c, sp, 1001, 9001, 0x18, get)
        from_backend6(t + 3000, b, c, sp, 9001, 1001 + len(get), 0x18, body)
    for k, (c, sp, b) in enumerate(flows6):
        t = 2000000 + 20000 * k + 10000
        to_vip6(t, c, sp, 1001 + len(get), 9001 + len(body), 0x11)
        from_backend6(t + 1000, b, c, sp, 9001 + len(body), 1002 + len(get), 0x11)
    moved6 = []
    for k in range(8, 16):
        c, sp = client6(k)
        b = backend6_of(after6, c, sp)
        was = backend6_of(before6, c, sp)
        if b != was:
            moved6.append((was[0], b[0]))
        c2_6[b[0]] += 1
        t = 2000000 + 20000 * k + 10000
        to_vip6(t, c, sp, 1000, 0, 0x02)
        from_backend6(t + 1000, b, c, sp, 9000, 1001, 0x12)
    pkts.sort(key=lambda p: p[0])
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for t, f in pkts:
        out.append(struct.pack("<IIII", BASE + t // 1000000, t % 1000000, len(f), len(f)) + f)
    with open("examples/lb.pcap", "wb") as fh:
        fh.write(b"".join(out))
    print("%d packets" % len(pkts))
    print("phase 1 new flows: " + ", ".join("%s %d" % (n, counts1[n]) for n in names))
    print("phase 2 new flows: " + ", ".join("%s %d" % (n, counts2[n]) for n in names))
    moved = sum(1 for s in range(M) if before[s] != after[s] and names[before[s]] != "web3")
    print("table slots of other backends that moved: %d of %d" % (moved, M))
    print("IPv6 phase 1 new flows: " + ", ".join("%s %d" % (n, c1_6[n]) for n in names6))
    print("IPv6 phase 2 new flows: " + ", ".join("%s %d" % (n, c2_6[n]) for n in names6))
    print("IPv6 phase 2 clients the drain moved (from, to): %s" % moved6)
    moved6 = sum(1 for s in range(M) if before6[s] != after6[s] and names6[before6[s]] != "v6web3")
    print("IPv6 table slots of other backends that moved: %d of %d" % (moved6, M))


main()
