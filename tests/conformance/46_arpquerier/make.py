#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

ME, MYIP = mac("02:00:00:00:00:01"), ip_aton("10.0.0.1")


def arp_frame(op, dst, sha, spa, tha, tpa, pad=True):
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, sha, spa, tha, tpa)
    f = dst + sha + b"\x08\x06" + body
    return f + b"\0" * (60 - len(f)) if pad else f


def hmac(n):
    return mac("02:00:00:00:10:%02x" % n)


def frames():
    f = []

    def ip(dst, n=20):
        f.append(ether("02:00:00:00:00:01", "02:00:00:00:00:99", 0x0800,
                       ipv4("10.0.0.99", dst, 17, udp("10.0.0.99", dst, 1, 2, bytes(range(n))),
                            ident=len(f))))

    def reply(last, to_me=True):
        f.append(arp_frame(2, ME if to_me else hmac(0x77), hmac(last), ip_aton("10.0.0.%d" % last),
                           ME if to_me else hmac(0x77), MYIP if to_me else ip_aton("10.0.0.77")))

    ip("10.0.0.2"); ip("10.0.0.2", 30); ip("10.0.0.3")
    ip("255.255.255.255"); ip("10.0.0.255"); ip("224.1.2.3"); ip("239.129.130.131")
    ip("0.0.0.0")
    reply(2)                                   # releases two packets
    ip("10.0.0.2", 40)                         # known now
    reply(4)                                   # nobody waits: learned
    ip("10.0.0.4")
    reply(3, to_me=False)                      # a reply seen for another host: learned too
    ip("10.0.0.3", 50); ip("10.0.0.5")
    return f


class Querier:
    def __init__(self, bcast, two_outputs):
        self.table, self.wait = {}, {}
        self.out = []
        self.queries_out = [] if two_outputs else self.out
        self.q = self.resp = self.drops = 0
        self.bcast = bcast

    def encap(self, p, dmac):
        q = p.copy()
        q.push(dmac + ME + b"\x08\x00")
        self.out.append(q)

    def ip(self, p):
        nh = bytes(p.data[16:20])
        if nh == b"\0\0\0\0":
            self.drops += 1
        elif nh == b"\xff" * 4 or nh in self.bcast:
            self.encap(p, b"\xff" * 6)
        elif nh[0] & 0xF0 == 0xE0:
            self.encap(p, bytes([1, 0, 0x5E, nh[1] & 0x7F, nh[2], nh[3]]))
        elif nh in self.table:
            self.encap(p, self.table[nh])
        else:
            if nh not in self.wait:
                self.wait[nh] = []
                self.q += 1
                self.queries_out.append(Pkt(arp_frame(1, b"\xff" * 6, ME, MYIP, bytes(6), nh,
                                                      pad=False), p.sec, p.nsec))
            self.wait[nh].append(p)

    def reply(self, p):
        self.resp += 1
        spa, sha = bytes(p.data[28:32]), bytes(p.data[22:28])
        self.table[spa] = sha
        for w in self.wait.pop(spa, []):
            self.encap(w, sha)


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    aq, aq1 = Querier({ip_aton("10.0.0.255")}, False), Querier(set(), True)
    for p in pkts:
        if p.data[12:14] == b"\x08\x06":
            aq.reply(p)
            aq1.reply(p)
        else:
            q = p.copy()
            q.pull(14)
            tl = struct.unpack("!H", q.data[2:4])[0]
            q.data = q.data[:tl]
            aq.ip(q)
            aq1.ip(q.copy())
    write_todump(os.path.join(HERE, "expected_out.pcap"), aq.out)
    write_todump(os.path.join(HERE, "expected_out1.pcap"), aq1.out)
    write_todump(os.path.join(HERE, "expected_queries1.pcap"), aq1.queries_out)
    lines = []
    for a in (aq, aq1):
        lines += [a.q, a.resp, len(set(a.table) | set(a.wait)), sum(len(w) for w in a.wait.values()), a.drops]
    write_text(os.path.join(HERE, "expected.txt"), lines)


main()
