#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

Each RED decides packet by packet from the length its queues have when the
packet arrives (nothing drains them during the trace):
- STABILITY s > 0: the first packet sees empty queues and feeds one 0 into
  the average (Click's empty-period update, one step when no earlier empty
  period is known); later packets update the scaled average with
  avg += ((len << 10) + 2^(s-1) - avg) >> s, and the decision uses
  (avg + 512) >> 10;
- STABILITY 0: the decision uses the instant length;
- decision value <= MIN_THRESH: accept; > the kill threshold (MAX_THRESH
  here, as MAX_P is 1 or GENTLE false): drop; in between only r2 (MAX_P 0,
  so the drop probability is 0): accept.
After the trace the Unqueues drain the queues in FIFO order (PrioSched
takes q3 first)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

DST = "192.168.50.5"


def frames():
    f = []
    for i in range(60):
        s = "10.1.%d.%d" % (i % 3, 10 + i % 7)
        if i % 3 == 1:
            f.append(eth_ip(ipv4(s, DST, 6, tcp(s, DST, 30000 + i, 443, b"r" * (i * 11 % 300)),
                                 ident=i)))
        else:
            f.append(eth_ip(ipv4(s, DST, 17, udp(s, DST, 7000 + i, 9999, b"q" * (i * 23 % 500)),
                                 ident=i)))
    return f


def unparse_real2(v, frac):
    """Click's cp_unparse_real2 for a 64-bit value."""
    one = 1 << frac
    ip, real = v >> frac, v & (one - 1)
    if not real:
        return str(ip)
    s = str(ip) + "."
    real = 10 * real + 5
    allow = 10
    rounder = 5
    while rounder < (one >> 1):
        rounder *= 10
    while True:
        if allow > one:
            real += (one >> 1) - rounder
        s += chr(ord("0") + (real >> frac))
        real = 10 * (real & (one - 1))
        allow *= 10
        if not real > allow:
            break
    return s


class Red:
    def __init__(self, lo, hi, stability):
        self.lo, self.hi, self.s = lo, hi, stability
        self.avg = 0
        self.drops = 0
        self.seen_empty = False

    def drop(self, qlen):
        if self.s == 0:
            a = qlen
        else:
            if qlen:
                x = (qlen << 10) + (1 << (self.s - 1))
            else:
                # Only the first packet sees empty queues: a single step.
                assert not self.seen_empty
                self.seen_empty = True
                x = 1 << (self.s - 1)
            self.avg += (x - self.avg) >> self.s
            a = (self.avg + 512) >> 10
        d = a > self.hi
        self.drops += d
        return d


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    r1, r2, r3 = Red(8, 8, 4), Red(2, 6, 0), Red(5, 5, 2)
    q1, q2, marked, q3, q4 = [], [], [], [], []
    for p in pkts:
        if not r1.drop(len(q1)):
            q1.append(p)
        if r2.drop(len(q2)):
            marked.append(p)
        else:
            q2.append(p)
        if not r3.drop(len(q3) + len(q4)):
            (q3 if p.data[23] == 6 else q4).append(p)
    assert r1.drops and r2.drops and r3.drops and q3 and q4
    write_todump(os.path.join(HERE, "expected_q1.pcap"), q1)
    write_todump(os.path.join(HERE, "expected_q2.pcap"), q2)
    write_todump(os.path.join(HERE, "expected_marked.pcap"), marked)
    write_todump(os.path.join(HERE, "expected_q34.pcap"), q3 + q4)
    avg1 = unparse_real2(r1.avg, 10)
    lines = [
        r1.drops, len(q1), avg1,
        # multi-line values end in a newline; print adds none then
        "%d current queue\n%s avg queue\n%d drops" % (len(q1), avg1, r1.drops),
        "q1",
        r2.drops, len(q2), "0",
        r3.drops, len(q3), len(q4), unparse_real2(r3.avg, 10),
        "q3\nq4", unparse_real2(round(0.02 * 65536), 16), 5, 5,
        0, 0, 0, 0, 0, len(q1), len(q2), len(q3) + len(q4), r1.drops,
    ]
    write_text(os.path.join(HERE, "expected.txt"), lines)


main()
