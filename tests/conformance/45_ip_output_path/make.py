#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "10.0.0.2", "10.0.1.9"
OWN = "02:00:00:00:00:02"
RR = bytes([7, 11, 4]) + bytes(8)


def pay(n, seed=0):
    return bytes((seed + i * 5) & 255 for i in range(n))


def frames():
    f = []
    for dst in (OWN, "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "02:00:00:00:00:07"):
        f.append(ether(dst, HOST_A, 0x0800, ipv4(A, B, 17, udp(A, B, 1, 2, b"hi"))))
    for n, kw in ((100, {}), (700, {}), (700, {"flags_off": 0x4000}), (700, {"opts": RR}),
                  (500, {"opts": RR, "flags_off": 0x4000}), (100, {"ttl": 1}),
                  (700, {"ttl": 1}), (100, {"opts": bytes([7, 7, 2, 0, 0, 0, 0])}),
                  (400, {"ttl": 2, "tos": 0x10}), (272, {"flags_off": 0x4000})):
        f.append(ether(OWN, HOST_A, 0x0800, ipv4(A, B, 17, udp(A, B, 3, 4, pay(n, n)), **kw)))
    f.append(ether(OWN, HOST_A, 0x0806, bytes(28)))
    return f


def gw_rr(d):
    """IPGWOptions(10.0.0.1) for the options used here; None for a bad one."""
    hl = (d[0] & 15) * 4
    if hl <= 20:
        return 0
    assert d[20] == 7
    ptr = d[22] - 1
    if ptr >= 3 and ptr + 4 <= d[21]:
        d[20 + ptr:24 + ptr] = ip_aton("10.0.0.1")
        d[22] += 4
    elif ptr != d[21]:
        return 22
    d[10:12] = b"\0\0"
    d[10:12] = struct.pack("!H", cksum(bytes(d[:hl])))
    return 0


def dec_ttl(d):
    if d[8] <= 1:
        return 1
    d[8] -= 1
    old = struct.unpack("!H", d[10:12])[0]
    s = (~old & 0xFFFF) + 0xFEFF
    d[10:12] = struct.pack("!H", ~((s + (s >> 16)) & 0xFFFF) & 0xFFFF)
    return 0


def set_hdr(h, total, off):
    h[2:4] = struct.pack("!H", total)
    h[6:8] = struct.pack("!H", off)
    h[10:12] = b"\0\0"
    h[10:12] = struct.pack("!H", cksum(bytes(h[:(h[0] & 15) * 4])))


def fragment(p, mtu, counts):
    d = p.data
    if len(d) <= mtu:
        return [p], []
    hl = (d[0] & 15) * 4
    off = struct.unpack("!H", d[6:8])[0]
    if off & 0x4000:
        counts[1] += 1
        return [], [p]
    fd = (mtu - hl) & ~7
    in_dlen = struct.unpack("!H", d[2:4])[0] - hl
    first = p.copy()
    first.data = bytearray(d[:hl + fd])
    set_hdr(first.data, hl + fd, off | 0x2000)
    outs = [first]
    o = fd
    while o < in_dlen:
        n = min((mtu - 20) & ~7, in_dlen - o)   # the only options here are RR: not copied
        q = p.copy()
        q.data = bytearray(first.data[:20]) + d[hl + o:hl + o + n]
        q.data[0] = 0x45
        set_hdr(q.data, 20 + n, (off | 0x2000) + (o >> 3) if n + o < in_dlen else off + (o >> 3))
        outs.append(q)
        o += n
    counts[0] += len(outs)
    return outs, []


def needfrag(p, ident):
    ip = bytes(p.data)
    msg = icmp(3, 4, struct.pack("!HH", 0, 300), ip[:576 - 28])
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(msg), ident, 0, 200, 1, 0,
                              ip_aton("10.0.0.2"), ip[12:16]))   # FixIPSrc(10.0.0.2)
    h[10:12] = struct.pack("!H", cksum(bytes(h)))
    return Pkt(bytes(h) + msg, BASE_SEC, 0)


def encap(q, src):
    q.data = bytearray(mac(src) + mac(OWN) + b"\x08\x00") + q.data
    return q


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("out", "badopt", "expired", "needfrag")}
    db = gwd = dtd = 0
    fc = [0, 0]
    ident = 1
    for p in pkts:
        dst = bytes(p.data[0:6])
        if dst != mac(OWN) and not dst[0] & 1:
            continue                                # HostEtherFilter: other host
        if p.data[12:14] != b"\x08\x00":
            continue
        p.pull(14)
        if dst[0] & 1:
            db += 1                                 # DropBroadcasts
            continue
        bad = gw_rr(p.data)
        if bad:
            gwd += 1
            p.anno[17] = bad
            outs["badopt"].append(encap(p, "02:00:00:00:00:0a"))
            continue
        if dec_ttl(p.data):
            dtd += 1
            outs["expired"].append(encap(p, "02:00:00:00:00:0b"))
            continue
        a, b = fragment(p, 300, fc)
        outs["out"] += [encap(q, "02:00:00:00:00:09") for q in a]
        for q in b:
            outs["needfrag"].append(encap(needfrag(q, ident), "02:00:00:00:00:01"))
            ident += 1
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [db, gwd, dtd, fc[0], fc[1]])


main()
