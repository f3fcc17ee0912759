#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "10.0.0.2", "10.0.0.9"


def pay(n, seed=0):
    return bytes((seed + i * 7) & 255 for i in range(n))


def frames():
    f = []
    u = lambda n, **kw: ipv4(A, B, 17, udp(A, B, 1000, 2000, pay(n, n)), **kw)
    f.append(eth_ip(u(20)))                                   # small, padded
    f.append(eth_ip(u(548)))                                  # exactly 576
    f.append(eth_ip(u(549)))                                  # 577
    f.append(eth_ip(u(1472)))                                 # 1500
    f.append(eth_ip(u(1472, flags_off=0x4000)))               # 1500, DF
    f.append(eth_ip(u(80, flags_off=0x4000)))                 # 108, DF
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1234, 80, pay(900, 3)), ident=0x4242)))
    # Options: RR (not copied), NOP, LSRR (copied), security (130, copied),
    # timestamp (not copied), EOL.
    rr = bytes([7, 7, 4, 0, 0, 0, 0])
    lsrr = bytes([131, 7, 4, 5, 5, 5, 5])
    sec = bytes([130, 11]) + bytes(9)
    ts = bytes([68, 8, 5, 0, 0, 0, 0, 0])
    f.append(eth_ip(u(700, opts=rr + b"\x01" + lsrr + sec + ts)))
    f.append(eth_ip(u(300, opts=b"\x01\x01" + rr + b"\x00" + lsrr)))
    f.append(eth_ip(u(300, opts=b"\x01" + bytes([130, 3, 1]))))   # copied, not 4-aligned
    # Already a fragment: MF set, offset 800 bytes; and a last fragment.
    f.append(eth_ip(ipv4(A, B, 17, pay(600, 9), flags_off=0x2000 | 100)))
    f.append(eth_ip(ipv4(A, B, 17, pay(333, 9), flags_off=200)))
    f.append(eth_ip(ipv4(A, B, 1, icmp(8, 0, b"\0\1\0\2", pay(1000)))))
    return f


def optcopy(opts):
    out = bytearray()
    i = 0
    while i < len(opts):
        t = opts[i]
        if t == 1:
            i += 1
            continue
        if t == 0 or i + 1 == len(opts) or opts[i + 1] < 2 or i + opts[i + 1] > len(opts):
            break
        if t & 0x80:
            out += opts[i:i + opts[i + 1]]
        i += opts[i + 1]
    while len(out) % 4:
        out.append(0)
    return bytes(out)


def set_hdr(h, total, off):
    h[2:4] = struct.pack("!H", total)
    h[6:8] = struct.pack("!H", off)
    h[10:12] = b"\0\0"
    hl = (h[0] & 15) * 4
    h[10:12] = struct.pack("!H", cksum(bytes(h[:hl])))


def fragment(p, mtu, counts):
    """Returns (output 0 packets, output 1 packets)."""
    d = p.data
    if len(d) <= mtu:
        return [p], []
    hl = (d[0] & 15) * 4
    first_dlen = (mtu - hl) & ~7
    ip_len = struct.unpack("!H", d[2:4])[0]
    in_dlen = ip_len - hl
    off = struct.unpack("!H", d[6:8])[0]
    if off & 0x4000 or first_dlen < 8:
        counts[1] += 1
        return [], [p]
    had_mf = off & 0x2000
    off |= 0x2000
    first = p.copy()
    first.data = bytearray(d[:hl + first_dlen])
    set_hdr(first.data, hl + first_dlen, off)
    outs = [first]
    opts = optcopy(bytes(d[20:hl]))
    ohl = 20 + len(opts)
    o = first_dlen
    while o < in_dlen:
        n = (mtu - ohl) & ~7
        if n + o > in_dlen:
            n = in_dlen - o
        h = bytearray(first.data[:20]) + opts
        h[0] = 0x40 | (ohl // 4)
        fo = off + (o >> 3)
        if n + o >= in_dlen and not had_mf:
            fo &= ~0x2000
        q = p.copy()
        q.data = h + d[hl + o:hl + o + n]
        set_hdr(q.data, ohl + n, fo)
        outs.append(q)
        o += n
    counts[0] += len(outs)
    return outs, []


def encap(q, dst):
    q = q.copy()
    q.data = bytearray(mac(dst) + mac("00:00:00:00:00:01") + b"\x08\x00") + q.data
    return q


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("576", "df576", "100", "df100")}
    c1, c2 = [0, 0], [0, 0]
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        p.pull(14)
        for mtu, c, k in ((576, c1, "576"), (100, c2, "100")):
            a, b = fragment(p.copy(), mtu, c)
            outs[k] += [encap(q, "00:00:00:00:00:02") for q in a]
            outs["df" + k] += [encap(q, "00:00:00:00:00:03") for q in b]
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), c1 + c2)


main()
