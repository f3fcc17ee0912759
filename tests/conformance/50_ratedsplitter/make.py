#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

RatedSplitter with Click's jiffy token bucket: the bucket is full at the first
refill, so the first BURST packets pass; at 1 packet/s the next token is a
second away, far longer than the run (see ratelib.burst_margin)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from ratelib import *  # noqa: E402,F403


def frames():
    f = []
    for i in range(30):
        s = "10.0.0.%d" % (1 + i % 4)
        d = "192.168.1.%d" % (10 + i % 3)
        f.append(eth_ip(ipv4(s, d, 17, udp(s, d, 4000 + i % 5, 53, b"r" * (i * 7 % 90)))))
    return f


def split(pkts, bucket, need=1):
    a, b = [], []
    for p in pkts:
        (a if bucket.remove_if(need) else b).append(p)
    if b:
        burst_margin(bucket, need)
    return a, b


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    rs1 = Bucket(1, capacity_tokens(1, size=5))
    a1, b1 = split(pkts, rs1)
    rs2 = Bucket(1, capacity_tokens(1, dur_ms=7000))
    a2, _ = split(pkts, rs2)
    rs3 = Bucket(2000, capacity_tokens(2000))
    a3, b3 = split(pkts, rs3)
    for name, v in [("rs1_0", a1), ("rs1_1", b1), ("rs2_0", a2), ("rs3_0", a3), ("rs3_1", b3)]:
        write_todump(os.path.join(HERE, "expected_%s.pcap" % name), v)
    write_text(os.path.join(HERE, "expected.txt"),
               [rs1.rate(), rs2.rate(), rs3.rate(), len(a2)])


main()
