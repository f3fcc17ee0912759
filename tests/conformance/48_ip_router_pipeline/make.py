#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

R = [mac("02:00:0a:00:00:01"), mac("02:00:0a:00:01:01")]
IFIP = [ip_aton("10.0.0.1"), ip_aton("10.0.1.1")]
MACS = {"10.0.0.2": "02:00:0a:00:00:02", "10.0.0.5": "02:00:0a:00:00:05",
        "10.0.1.2": "02:00:0a:00:01:02", "10.0.1.7": "02:00:0a:00:01:07",
        "10.0.0.1": "02:00:0a:00:00:01", "10.0.1.1": "02:00:0a:00:01:01"}
ROUTES = [("10.0.0.1", 32, None, 0), ("10.0.0.255", 32, None, 0), ("10.0.0.0", 32, None, 0),
          ("10.0.1.1", 32, None, 0), ("10.0.1.255", 32, None, 0), ("10.0.1.0", 32, None, 0),
          ("10.0.0.0", 24, None, 1), ("10.0.1.0", 24, None, 2),
          ("255.255.255.255", 32, None, 0), ("0.0.0.0", 32, None, 0),
          ("198.51.100.0", 24, "10.0.0.2", 1), ("203.0.113.0", 24, "10.0.1.2", 2),
          ("203.0.113.128", 25, "10.0.0.2", 1)]
BAD_SRC = {ip_aton(a) for a in ("10.0.0.255", "10.0.1.255", "0.0.0.0", "255.255.255.255")}


def arp_frame(op, dst, sha, spa, tha, tpa, pad=True):
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, sha, spa, tha, tpa)
    f = dst + sha + b"\x08\x06" + body
    return f + b"\0" * (60 - len(f)) if pad else f


def pay(n, seed):
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


def frames():
    f = []
    n = [0]
    bc = mac("ff:ff:ff:ff:ff:ff")

    def q(who, target):
        f.append(arp_frame(1, bc, mac(MACS[who]), ip_aton(who), bytes(6), ip_aton(target)))

    def rep(who, to):
        f.append(arp_frame(2, mac(MACS[to]), mac(MACS[who]), ip_aton(who), mac(MACS[to]), ip_aton(to)))

    def ip(src, dst, size=32, ldst=None, csum=None, **kw):
        n[0] += 1
        router = MACS["10.0.0.1"] if src.startswith("10.0.0.") else MACS["10.0.1.1"]
        pkt = ipv4(src, dst, 17, udp(src, dst, 6000 + n[0], 7, pay(size, n[0])),
                   ident=0x200 + n[0], **kw)
        if csum is not None:
            pkt = pkt[:10] + struct.pack("!H", csum) + pkt[12:]
        f.append(ether(ldst or router, MACS.get(src, "02:00:0a:00:00:09"), 0x0800, pkt))

    q("10.0.1.7", "10.0.1.1"); q("10.0.0.5", "10.0.0.1"); q("10.0.1.7", "10.0.1.99")
    ip("10.0.1.7", "198.51.100.9"); ip("10.0.1.7", "198.51.100.10", 60)
    ip("10.0.0.5", "203.0.113.9", ttl=1)                 # error: 10.0.0.5 unknown yet
    rep("10.0.0.2", "10.0.0.1"); rep("10.0.0.5", "10.0.0.1")
    ip("10.0.0.5", "203.0.113.20")                        # 10.0.1.2 unknown
    ip("10.0.0.5", "203.0.113.21", ttl=2, tos=0x10)
    rep("10.0.1.2", "10.0.1.1"); rep("10.0.1.7", "10.0.1.1")
    ip("10.0.1.7", "198.51.100.11", 1572)                 # two fragments
    ip("10.0.0.5", "203.0.113.22", 1572, flags_off=0x4000)  # needfrag
    ip("10.0.0.5", "203.0.113.23", 1400, flags_off=0x4000)  # fits
    ip("10.0.1.7", "198.51.100.12", opts=bytes([7, 11, 4]) + bytes(9))
    ip("10.0.1.7", "198.51.100.13", opts=bytes([7, 7, 8]) + bytes(5))   # full RR
    ip("10.0.0.5", "203.0.113.24", opts=bytes([7, 11, 3]) + bytes(9))   # bad pointer
    ip("10.0.1.7", "198.51.100.14", ldst="ff:ff:ff:ff:ff:ff")
    ip("10.0.1.7", "198.51.100.15", ldst="01:00:5e:00:00:09")
    ip("10.0.0.5", "203.0.113.25", csum=0x1234)
    ip("10.0.0.5", "198.51.100.16")                       # redirect
    ip("10.0.1.7", "203.0.113.30")                        # redirect on eth1
    ip("10.0.1.7", "203.0.113.130")                       # /25: eth0
    ip("10.0.0.5", "10.0.1.1"); ip("10.0.0.5", "10.0.0.255"); ip("10.0.1.7", "10.0.0.5")
    ip("10.0.0.5", "192.0.2.7")                           # no route
    ip("10.0.0.255", "203.0.113.26")                      # bad source
    ip("10.0.1.7", "203.0.113.131", ttl=1)                # time exceeded from eth1 route
    f.append(ether("02:00:0a:00:00:01", "02:00:0a:00:00:05", 0x86DD, bytes(40)))
    f.append(ether("02:00:0a:00:00:01", "02:00:0b:00:00:05", 0x0800, bytes(40)))
    return f


def lookup(dst):
    best = None
    for a, ln, gw, out in ROUTES:
        m = (0xFFFFFFFF << (32 - ln)) & 0xFFFFFFFF
        if struct.unpack("!I", dst)[0] & m == struct.unpack("!I", ip_aton(a))[0] & m:
            if best is None or ln > best[0]:
                best = (ln, gw, out)
    return best


class Router:
    def __init__(self):
        self.c = dict.fromkeys(
            "arpq_in0 arpq_in1 arpa0 arpa1 arpr_in0 arpr_in1 q0 q1 resp0 resp1 ip_in chk local "
            "fwd0 fwd1 db0 db1 ttl0 ttl1 frag0 frag1 opt0 opt1 redir0 redir1 frags0 frags1 "
            "other0 other1 foreign out".split(), 0)
        self.out, self.redirects = [], []
        self.arp = [{}, {}]
        self.wait = [{}, {}]
        self.ident = 1

    def emit(self, p):
        self.c["out"] += 1
        self.out.append(p)

    def input(self, p):
        src = bytes(p.data[6:11])
        if src == bytes([2, 0, 10, 0, 0]):
            i = 0
        elif src == bytes([2, 0, 10, 0, 1]):
            i = 1
        else:
            self.c["foreign"] += 1
            return
        d = bytes(p.data[0:6])
        if d == b"\xff" * 6:
            p.ptype = 1
        elif d[0] & 1:
            p.ptype = 2
        elif d != R[i]:
            return                                      # HostEtherFilter: other host
        et, op = bytes(p.data[12:14]), bytes(p.data[20:22])
        if et == b"\x08\x06" and op == b"\0\1":
            self.c["arpq_in%d" % i] += 1
            if bytes(p.data[38:42]) == IFIP[i]:
                self.c["arpa%d" % i] += 1
                r = Pkt(arp_frame(2, bytes(p.data[22:28]), R[i], IFIP[i], bytes(p.data[22:28]),
                                  bytes(p.data[28:32]), pad=False), BASE_SEC, 0)
                self.emit(r)
        elif et == b"\x08\x06" and op == b"\0\2":
            self.c["arpr_in%d" % i] += 1
            self.c["resp%d" % i] += 1
            spa, sha = bytes(p.data[28:32]), bytes(p.data[22:28])
            self.arp[i][spa] = sha
            for w in self.wait[i].pop(spa, []):
                self.send(i, w, sha)
        elif et == b"\x08\x00":
            p.paint = i + 1
            p.pull(14)
            d = p.data
            hl = (d[0] & 15) * 4
            tl = struct.unpack("!H", d[2:4])[0]
            if cksum(bytes(d[:hl])) or bytes(d[12:16]) in BAD_SRC:
                self.c["chk"] += 1
                return
            p.data = d[:tl]
            p.mark_ip()
            self.c["ip_in"] += 1
            p.dst_anno = bytes(d[16:20])
            self.route(p)
        else:
            self.c["other%d" % i] += 1

    def route(self, p):
        r = lookup(p.dst_anno)
        if r is None:
            return
        ln, gw, out = r
        if gw:
            p.dst_anno = ip_aton(gw)
        if out == 0:
            self.c["local"] += 1
        else:
            self.forward(out - 1, p)

    def error(self, i, p, typ, code, rest):
        ip = bytes(p.data)
        self.ident, ident = self.ident + 1, self.ident
        msg = icmp(typ, code, rest, ip[:576 - 28])
        e = Pkt(ipv4(".".join(map(str, IFIP[i])), ".".join(map(str, ip[12:16])), 1, msg,
                     ttl=200, ident=ident), BASE_SEC, 0)
        e.mark_ip()
        e.dst_anno = ip[12:16]
        e.fix = True
        return e

    def forward(self, i, p):
        d = p.data
        if p.ptype:
            self.c["db%d" % i] += 1
            return
        if p.paint == i + 1:
            self.c["redir%d" % i] += 1
            e = self.error(i, p, 5, 1, p.dst_anno)
            host = {b"\x0a\x00\x00\x05": "05", b"\x0a\x00\x00\x07": "07",
                    b"\x0a\x00\x01\x05": "05", b"\x0a\x00\x01\x07": "07"}[bytes(e.data[16:20])]
            e.push(R[i] + mac("02:00:0a:00:0%d:%s" % (i, host)) + b"\x08\x00")
            e.data[0:12] = e.data[6:12] + e.data[0:6]
            self.redirects.append(e)
        hl = (d[0] & 15) * 4
        if hl > 20:                                     # IPGWOptions: RR only here
            o = 20
            changed = False
            while o < hl and d[o] != 0:
                if d[o] == 1:
                    o += 1
                    continue
                ln, ptr = d[o + 1], d[o + 2]
                if d[o] == 7:
                    if ptr < 4:
                        self.c["opt%d" % i] += 1
                        self.route(self.error(i, p, 12, 0, bytes([o + 2, 0, 0, 0])))
                        return
                    if ptr + 3 <= ln:
                        d[o + ptr - 1:o + ptr + 3] = IFIP[i]
                        d[o + 2] += 4
                        changed = True
                o += ln
            if changed:
                d[10:12] = b"\0\0"
                d[10:12] = struct.pack("!H", cksum(bytes(d[:hl])))
        if getattr(p, "fix", False):                   # FixIPSrc
            p.fix = False
            d[12:16] = IFIP[i]
            d[10:12] = b"\0\0"
            d[10:12] = struct.pack("!H", cksum(bytes(d[:hl])))
        if d[8] <= 1:
            self.c["ttl%d" % i] += 1
            self.route(self.error(i, p, 11, 0, bytes(4)))
            return
        d[8] -= 1
        old = struct.unpack("!H", d[10:12])[0]
        s = (~old & 0xFFFF) + 0xFEFF
        d[10:12] = struct.pack("!H", ~((s + (s >> 16)) & 0xFFFF) & 0xFFFF)
        tl = len(d)
        if tl > 1500:
            if d[6] & 0x40:
                self.c["frag%d" % i] += 1
                self.route(self.error(i, p, 3, 4, struct.pack("!HH", 0, 1500)))
                return
            fd = (1500 - hl) & ~7
            parts = []
            o = 0
            while o < tl - hl:
                n = min(fd, tl - hl - o)
                q = p.copy()
                h = bytearray(d[:20])
                more = 0x2000 if o + n < tl - hl else 0
                h[2:4] = struct.pack("!H", 20 + n)
                h[6:8] = struct.pack("!H", more | (o >> 3))
                h[10:12] = b"\0\0"
                h[10:12] = struct.pack("!H", cksum(bytes(h)))
                q.data = h + d[hl + o:hl + o + n]
                parts.append(q)
                o += n
            self.c["frags%d" % i] += len(parts)
        else:
            parts = [p]
        for q in parts:
            self.c["fwd%d" % i] += 1
            self.arpq(i, q)

    def arpq(self, i, p):
        nh = bytes(p.dst_anno)
        if nh in self.arp[i]:
            self.send(i, p, self.arp[i][nh])
            return
        if nh not in self.wait[i]:
            self.wait[i][nh] = []
            self.c["q%d" % i] += 1
            qp = Pkt(arp_frame(1, b"\xff" * 6, R[i], IFIP[i], bytes(6), nh, pad=False),
                     p.sec, p.nsec)
            self.emit(qp)
        self.wait[i][nh].append(p)

    def send(self, i, p, dmac):
        p.push(dmac + R[i] + b"\x08\x00")
        self.emit(p)


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    r = Router()
    for p in pkts:
        r.input(p)
    write_todump(os.path.join(HERE, "expected_out.pcap"), r.out)
    write_todump(os.path.join(HERE, "expected_redirect.pcap"), r.redirects)
    c = r.c
    write_text(os.path.join(HERE, "expected.txt"), [
        len(pkts), c["arpq_in0"], c["arpq_in1"], c["arpa0"], c["arpa1"], c["arpr_in0"],
        c["arpr_in1"], c["q0"], c["q1"], c["resp0"], c["resp1"], c["ip_in"], c["chk"],
        c["local"], c["fwd0"], c["fwd1"], c["db0"], c["db1"], c["ttl0"], c["ttl1"],
        c["frag0"], c["frag1"], c["opt0"], c["opt1"], c["redir0"], c["redir1"],
        c["frags0"], c["frags1"], c["other0"], c["other1"], c["foreign"], c["out"]])


main()
