#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def frames():
    f = []
    for i in range(30):
        s = "10.%d.%d.%d" % (i % 7, (i * 37) % 256, (i * 91) % 256)
        d = "172.%d.%d.%d" % (16 + i % 16, (i * 13) % 256, (255 - i * 5) % 256)
        f.append(eth_ip(ipv4(s, d, 17, udp(s, d, 1024 + i * 17, 53, b"h" * (i % 9)))))
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    f.append(ether(HOST_B, HOST_A, 0x0800, bytes(19), pad=False))   # 33 bytes: < 26+8
    f.append(ether(HOST_B, HOST_A, 0x0800, bytes(20), pad=False))   # 34 bytes: exactly 26+8
    f.append(ether(HOST_B, HOST_A, 0x88cc, b"\xff" * 40))
    f.append(b"\x01\x02\x03")
    return f


def hash_switch(data, off, ln, n):
    if len(data) < off + ln:
        return 0
    d = sum(data[off:off + ln])
    if n in (2, 4, 8):
        return (d ^ (d >> 4)) & (n - 1)
    return d % n


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {}
    add = lambda k, p: outs.setdefault(k, []).append(p)
    for k in ["hash3_%d" % i for i in range(3)] + ["hash4_%d" % i for i in range(4)] + \
             ["rr_%d" % i for i in range(3)] + ["static_1", "switch_2"]:
        outs[k] = []
    for i, p in enumerate(pkts):
        add("hash3_%d" % hash_switch(p.data, 26, 8, 3), p)
        add("hash4_%d" % hash_switch(p.data, 30, 4, 4), p)
        add("rr_%d" % (i % 3), p)
        add("static_1", p)
        add("switch_2", p)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [0, 0, 0, 0, 0, 0, 2])


main()
