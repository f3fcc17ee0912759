#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def frames():
    f = []
    A = "10.0.0.1"
    for i in range(16):
        d = "192.168.%d.%d" % (i, 200 - i)
        f.append(eth_ip(ipv4(A, d, 17, udp(A, d, 1000, 2000 + i, b"u" * (i * 13)))))
    full = eth_ip(ipv4(A, "10.9.8.7", 6, tcp(A, "10.9.8.7", 1, 2, b"s" * 1400)))
    f.append((full[:64], len(full)))                      # extra length 1390 = 0x56e
    f.append((full[:200], 200 + 0x10000 + 0xff))          # extra length 0x100ff - 200 + 200
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    f.append(ether("ff:ff:ff:ff:ff:ff", HOST_A, 0x86DD, bytes(60)))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("ts_fixed", "paint_extra_len", "paint_anno", "dst_anno_paint")}
    all_n = all_b = st_n = st_b = c2_n = c2_b = 0
    for p in pkts:
        all_n += 1
        all_b += len(p.data)
        q = p.copy(); q.sec, q.nsec = 1234, 500000000; outs["ts_fixed"].append(q)
        q = p.copy(); q.sec, q.nsec = 1700000000, 123456789
        q.extra = (q.extra & ~0xFF) | 5                   # Paint(5, ANNO 28): low byte of EXTRA_LENGTH
        outs["paint_extra_len"].append(q)
        q = p.copy(); c2_n += 1; c2_b += len(q.data); outs["paint_anno"].append(q)
        if p.data[12:14] == b"\x08\x00":
            q = p.copy()
            anno = bytearray(q.data[30:34]); anno[0] = 99     # Paint(99, ANNO 0) on the dst IP annotation
            q.data[26:30] = anno
            st_n += 1; st_b += len(q.data) - 14
            outs["dst_anno_paint"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [all_n, all_b, st_n, st_b, c2_n, c2_b])


main()
