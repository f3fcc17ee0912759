#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

BandwidthRatedSplitter: a packet goes to output 0 while the bucket holds at
least 131072 bytes, then takes its length; the capacity is RATE*20ms (or
BURST_BYTES, or RATE*BURST_DURATION) plus 131072. At 2000 bytes/s a refused
packet lacks at least 100 ms worth of bytes (ratelib.burst_margin)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from ratelib import *  # noqa: E402,F403


def frames():
    f = []
    for i in range(30):
        s = "10.0.1.%d" % (1 + i % 3)
        d = "192.168.2.%d" % (1 + i % 5)
        f.append(eth_ip(ipv4(s, d, 17, udp(s, d, 5000 + i, 80, b"b" * (40 + i * 13 % 200)))))
    return f


def split(pkts, bucket):
    a, b = [], []
    for p in pkts:
        if bucket.contains(BW_THRESH):
            bucket.remove(len(p.data))
            a.append(p)
        else:
            b.append(p)
            burst_margin(bucket, BW_THRESH, 50)
    return a, b


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    b1 = Bucket(2000, capacity_tokens(2000, size=850, bandwidth=True))
    a1, r1 = split(pkts, b1)
    b2 = Bucket(2000, capacity_tokens(2000, dur_ms=1200, bandwidth=True))
    a2, _ = split(pkts, b2)
    b3 = Bucket(125000000, capacity_tokens(125000000, bandwidth=True))
    a3, r3 = split(pkts, b3)
    for b in (b1, b2, b3):
        assert time_to_fill(b) < 100000
    for name, v in [("b1_0", a1), ("b1_1", r1), ("b2_0", a2), ("b3_0", a3), ("b3_1", r3)]:
        write_todump(os.path.join(HERE, "expected_%s.pcap" % name), v)
    write_text(os.path.join(HERE, "expected.txt"),
               [unparse_bandwidth(b1.rate()), unparse_bandwidth(b2.rate()),
                unparse_bandwidth(b3.rate()), len(a1), len(a2)])


main()
