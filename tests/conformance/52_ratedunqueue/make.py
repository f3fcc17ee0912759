#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

RatedUnqueue and BandwidthRatedUnqueue drain their queues while the bucket
(full at the first refill) allows; the next token is far longer away than
the 10 ms wait, so exactly those packets have left (FIFO order)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from ratelib import *  # noqa: E402,F403


def frames():
    f = []
    for i in range(25):
        s = "10.0.2.%d" % (1 + i % 2)
        d = "192.168.3.1"
        f.append(eth_ip(ipv4(s, d, 6, tcp(s, d, 6000 + i, 443, b"u" * (i * 29 % 150)))))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    ru = Bucket(1, capacity_tokens(1, size=7))
    out1 = []
    for p in pkts:
        if not ru.remove_if(1):
            burst_margin(ru, 1)
            break
        out1.append(p)
    assert time_to_fill(ru) < 100000
    bru = Bucket(2000, capacity_tokens(2000, size=1100, bandwidth=True))
    assert time_to_fill(bru) < 100000
    out2 = []
    for p in pkts:
        if not bru.contains(BW_THRESH):
            burst_margin(bru, BW_THRESH, 70)
            break
        bru.remove(len(p.data))
        out2.append(p)
    write_todump(os.path.join(HERE, "expected_ru.pcap"), out1)
    write_todump(os.path.join(HERE, "expected_bru.pcap"), out2)
    write_text(os.path.join(HERE, "expected.txt"),
               [len(pkts) - len(out1), len(pkts) - len(out2), ru.rate(),
                unparse_bandwidth(bru.rate())])


main()
