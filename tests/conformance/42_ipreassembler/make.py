#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B, C = "10.0.0.2", "10.0.0.9", "10.0.0.3"


def pay(n, seed=0):
    return bytes((seed + i * 13) & 255 for i in range(n))


def frag(src, ident, payload, off, end, mf, opts=b"", proto=17, data=None, mac_src=HOST_A):
    """Fragment of a datagram with `payload`: bytes [off, end), or `data`."""
    d = payload[off:end] if data is None else data
    flags = (off // 8) | (0x2000 if mf else 0)
    return ether(HOST_B, mac_src, 0x0800,
                 ipv4(src, B, proto, d, ident=ident, flags_off=flags, opts=opts))


def frames():
    f = []
    pa = udp(A, B, 1111, 2222, pay(100, 1))           # 108 bytes
    pb = udp(A, B, 3333, 4444, pay(60, 2))            # 68 bytes
    pc = pay(64, 3)
    pd = udp(C, B, 5555, 6666, pay(30, 4))            # 38 bytes, same ID as a
    pe = udp(A, B, 7777, 8888, pay(40, 5))            # 48 bytes, first has options
    pg = pay(48, 6)
    f.append(eth_ip(ipv4(A, B, 17, udp(A, B, 1, 2, b"plain"))))     # not a fragment
    # a: in order, three fragments (the middle one's link header differs).
    f.append(frag(A, 0x0101, pa, 0, 40, True))
    f.append(frag(A, 0x0101, pa, 40, 80, True, mac_src="02:00:00:00:00:0a"))
    # d: same ID and bucket as a, other source, reversed.
    f.append(frag(C, 0x0101, pd, 16, 38, False))
    f.append(frag(A, 0x0101, pa, 80, 108, False))
    f.append(frag(C, 0x0101, pd, 0, 16, True, mac_src="02:00:00:00:00:0c"))
    # b: reversed order, last fragment padded by Ethernet.
    f.append(frag(A, 0x0202, pb, 64, 68, False))
    f.append(frag(A, 0x0202, pb, 32, 64, True))
    f.append(frag(A, 0x0202, pb, 0, 32, True))
    # c: overlapping (later bytes win) and duplicate fragments, protocol 6.
    f.append(frag(A, 0x0303, pc, 0, 24, True, proto=6))
    f.append(frag(A, 0x0303, pc, 16, 48, True, proto=6, data=b"\xee" * 32))
    f.append(frag(A, 0x0303, pc, 16, 48, True, proto=6, data=b"\xdd" * 32))
    f.append(frag(A, 0x0303, pc, 40, 64, False, proto=6))
    f.append(frag(A, 0x0303, pc, 64, 72, True, proto=6))          # past the end: ignored
    # e: first fragment with options (arriving first).
    f.append(frag(A, 0x0404, pe, 0, 24, True, opts=bytes([7, 7, 4, 0, 0, 0, 0, 0])))
    f.append(frag(A, 0x0404, pe, 24, 48, False))
    # Bad fragments: a middle one of 7 bytes, one ending past 65535, one with
    # total length shorter than its header.
    f.append(frag(A, 0x0505, pay(8), 0, 7, True))
    f.append(frag(A, 0x0506, pay(16), 0, 16, False)[:20] +
             ether(HOST_B, HOST_A, 0x0800, ipv4(A, B, 17, pay(16), ident=0x0506,
                                                flags_off=8190))[20:])
    f.append(eth_ip(ipv4(A, B, 17, pay(8), ident=0x0507, flags_off=0x2001, total_len=16)))
    # g: left incomplete. (A packet left without its first fragment would show
    # unset bytes in the dump.)
    f.append(frag(A, 0x0606, pg, 0, 8, True))
    f.append(frag(A, 0x0606, pg, 24, 32, True))
    f.append(frag(A, 0x0606, pg, 40, 48, False))
    # Many packets' first halves, to fill the HIMEM 1500 reassembler.
    for k in range(12):
        pk = pay(160, 10 + k)
        f.append(frag(A, 0x0700 + k, pk, 0, 80, True))
    f.append(frag(A, 0x0700, pay(160, 10), 80, 160, False))
    f.append(frag(A, 0x0705, pay(160, 15), 80, 160, False))
    return f


class Queue:
    def __init__(self, key, ts):
        self.key = key
        self.buf = bytearray()
        self.chunks = []          # covered [off, end) ranges, merged
        self.last_seen = False
        self.first = None         # the offset-0 fragment (link + IP header)
        self.ts = ts

    def tlen(self):
        return len(self.buf)


def merge(chunks, a, b):
    out = []
    for (x, y) in sorted(chunks + [(a, b)]):
        if out and x <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], y))
        else:
            out.append((x, y))
    return out


class Reassembler:
    def __init__(self, himem=256 * 1024):
        self.buckets = [[] for _ in range(256)]
        self.mem = 0
        self.high = himem
        self.low = (himem >> 2) * 3
        self.seen = self.good = self.failed = self.bad = 0
        self.gaveup = 0

    def push(self, p):
        ip = p.data[14:]
        off = struct.unpack("!H", ip[6:8])[0]
        if off & 0x3FFF == 0:
            return p
        self.seen += 1
        hl = (ip[0] & 15) * 4
        p_off = (off & 0x1FFF) * 8
        p_last = p_off + struct.unpack("!H", ip[2:4])[0] - hl
        mf = bool(off & 0x2000)
        dlen = len(ip) - hl
        if p_last > 0xFFFF or p_last <= p_off or (p_last % 8 and mf) or dlen < p_last - p_off:
            self.bad += 1
            return None
        data = ip[hl:hl + p_last - p_off]
        if self.mem > self.high:
            self.evict()
        key = (bytes(ip[4:6]), ip[9], bytes(ip[12:20]))
        bl = self.buckets[ip[4]]
        q = next((x for x in bl if x.key == key), None)
        if q is None:
            q = Queue(key, p.sec if p_off == 0 else 0)
            q.buf = bytearray(p_last)
            bl.insert(0, q)
            self.mem += 40 + p_last
        elif p_last > q.tlen():
            if q.last_seen:
                return None
            self.mem += p_last - q.tlen()
            q.buf += bytearray(p_last - q.tlen())
        q.buf[p_off:p_last] = data
        q.chunks = merge(q.chunks, p_off, p_last)
        if p_off == 0:
            q.first = p
            q.ts = p.sec
        if not mf:
            q.last_seen = True
        if q.last_seen and q.chunks == [(0, q.tlen())]:
            bl.remove(q)
            self.mem -= 40 + q.tlen()
            self.good += 1
            fp = q.first
            fip = fp.data[14:]
            fhl = (fip[0] & 15) * 4
            h = bytearray(fip[:fhl])
            h[2:4] = struct.pack("!H", fhl + q.tlen())
            h[6:8] = struct.pack("!H", struct.unpack("!H", h[6:8])[0] & 0x4000)
            h[10:12] = b"\0\0"
            h[10:12] = struct.pack("!H", cksum(bytes(h)))
            r = fp.copy()
            r.data = bytearray(fp.data[:14]) + h + q.buf
            r.sec, r.nsec = p.sec, p.nsec
            return r
        return None

    def evict(self):
        for delta in (10, 5, 0):
            for bl in self.buckets:
                for q in list(bl):
                    if delta == 0 or q.ts < BASE_SEC - delta:
                        bl.remove(q)
                        self.mem -= 40 + q.tlen()
                        self.gaveup += 1
                        self.failed += 1
                        if self.mem <= self.low:
                            return

    def dump(self):
        s = ("frags seen total:    %d\ngood reassemblies:   %d\nfailed reassemblies: %d\n"
             "bad fragments seen:  %d\ncached chunk data:\n"
             % (self.seen, self.good, self.failed, self.bad))
        for bl in self.buckets:
            for q in bl:
                ident, _, addrs = q.key
                sport, dport = struct.unpack("!HH", q.buf[0:4])
                s += " (%d.%d.%d.%d, %d, %d.%d.%d.%d, %d) %d" % (
                    tuple(addrs[:4]) + (sport,) + tuple(addrs[4:]) + (dport,
                    struct.unpack("!H", ident)[0]))
                for (a, b) in q.chunks:
                    s += " (%d,%d)" % (a, b)
                s += "\n"
        return s


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    r, r2 = Reassembler(), Reassembler(1500)
    out, out2 = [], []
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        for ra, o in ((r, out), (r2, out2)):
            x = ra.push(p.copy())
            if x is not None:
                o.append(x)
    write_todump(os.path.join(HERE, "expected_reassembled.pcap"), out)
    write_todump(os.path.join(HERE, "expected_himem.pcap"), out2)
    with open(os.path.join(HERE, "expected.txt"), "w") as fh:
        fh.write(r.dump() + r2.dump() + "%d\n" % r2.gaveup)


main()
