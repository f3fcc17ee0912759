#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def frames():
    f = []
    A, B = "10.0.0.1", "10.0.0.2"
    for n in (0, 1, 5, 6, 7, 18, 19, 100, 700):
        f.append(eth_ip(ipv4(A, B, 17, udp(A, B, 9, 9, bytes(range(256)) * (n // 256) + bytes(n % 256)))))
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 80, 1234, b"w" * 30, opts=b"\x02\x04\x05\xb4"), opts=b"\x94\x04\x00\x00")))
    f.append(eth_ip(ipv4(A, B, 1, icmp(0, 0, b"\0\0\0\0")), pad=False))                 # 42 bytes
    f.append(eth_ip(ipv4(A, B, 47, b"\0\0"), pad=False))                                   # 36 bytes
    full = eth_ip(ipv4(A, B, 6, tcp(A, B, 80, 1234, b"s" * 1446)))
    f.append((full[:100], len(full)))                                                      # snapped record
    f.append((full[:54], len(full)))
    f.append((full[:34], len(full)))                                                   # IP header only
    big = eth_ip(ipv4(A, B, 17, udp(A, B, 1, 1, b"J" * 1858)))                             # 1900 bytes
    f.append(big)
    f.append((big[:1800], 9000))                                                           # jumbo, snapped
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    f.append(ether(HOST_B, HOST_A, 0x88b5, bytes(100), pad=False))
    f.append(b"\xaa" * 10)
    return f


def truncate(p, n, extra=True):
    if len(p.data) > n:
        k = len(p.data) - n
        if extra:
            p.extra += k
        p.take(k)


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("trunc60", "trunc42_noextra", "passthrough", "l4_head", "snap64", "snap0")}
    for p in pkts:
        q = p.copy(); truncate(q, 60); outs["trunc60"].append(q)
        q = p.copy(); truncate(q, 42, False); outs["trunc42_noextra"].append(q)
        outs["passthrough"].append(p.copy())
        outs["snap64"].append(p.copy())
        outs["snap0"].append(p.copy())
        if len(p.data) >= 14 and p.data[12:14] == b"\x08\x00":
            q = p.copy()
            q.mark_ip(14)
            hdr = bytes(q.data[14:q.th])
            q.pull(q.th)                       # StripIPHeader
            truncate(q, 8)
            q.data = bytearray(hdr) + q.data   # UnstripIPHeader
            q.data = bytearray(mac("00:00:00:00:00:02") + mac("00:00:00:00:00:01") + b"\x08\x00") + q.data
            outs["l4_head"].append(q)
    for k, v in outs.items():
        snap = {"snap64": 64, "snap0": 0xFFFFFFFF}.get(k, 2000)
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v, snaplen=snap)


main()
