#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "10.0.0.2", "10.0.0.9"


def frames():
    f = []
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1234, 80, b"GET /", seq=0x11223344,
                                       ack=0x55667788))))
    f.append(eth_ip(ipv4(A, B, 17, udp(A, B, 5353, 53, b"query"))))
    f.append(eth_ip(ipv4(A, B, 1, icmp(8, 0, b"\0\1\0\1", b"ping"))))
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1, 2, b"x" * 40), flags_off=0x2000)))  # first frag
    f.append(eth_ip(ipv4(A, B, 6, b"y" * 40, flags_off=0x0005)))                  # later frag
    f.append(eth_ip(ipv4(A, B, 17, b"z" * 20, flags_off=0x2003)))
    f.append(eth_ip(ipv4(A, B, 17, b"\x01\x02\x03\x04\x05\x06", total_len=26)))   # padded
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 7, 8, b"opt"), opts=bytes([7, 7, 4]) + bytes(4))))
    f.append(eth_ip(ipv4(A, B, 47, bytes(24))))
    f.append(eth_ip(ipv4("192.168.5.5", "172.16.0.1", 17, udp("192.168.5.5", "172.16.0.1",
                                                              9, 10, b"q"), csum=0xbeef)))
    return f


def mirror(p):
    d = p.data
    s, t = bytes(d[12:16]), bytes(d[16:20])
    d[12:16], d[16:20] = t, s
    hl = (d[0] & 15) * 4
    first = struct.unpack("!H", d[6:8])[0] & 0x1FFF == 0
    if d[9] in (6, 17) and first and len(d) >= hl + 8:
        d[hl:hl + 2], d[hl + 2:hl + 4] = d[hl + 2:hl + 4], d[hl:hl + 2]
        if d[9] == 6:
            d[hl + 4:hl + 8], d[hl + 8:hl + 12] = d[hl + 8:hl + 12], d[hl + 4:hl + 8]
    return s


def fix(d, addr):
    hl = (d[0] & 15) * 4
    d[12:16] = ip_aton(addr)
    d[10:12] = b"\0\0"
    d[10:12] = struct.pack("!H", cksum(bytes(d[:hl])))


def port_unreachable(p, ident):
    ip = bytes(p.data)
    msg = icmp(3, 3, b"\0\0\0\0", ip[:576 - 28])
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(msg), ident, 0, 200, 1, 0,
                              ip_aton("1.1.1.1"), ip[12:16]))
    h[10:12] = struct.pack("!H", cksum(bytes(h)))
    return Pkt(bytes(h) + msg, BASE_SEC, 0)


def encap(q, anno=None):
    eth = bytearray(mac("00:00:00:00:00:02") + mac("00:00:00:00:00:01") + b"\x08\x00")
    if anno is not None:
        eth[0:4] = anno
    q.data = eth + q.data
    return q


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("mirror", "mirror_noanno", "fix", "nofix")}
    ident = 1
    for p in pkts:
        p.pull(14)
        q = p.copy()
        anno = mirror(q)
        outs["mirror"].append(encap(q, anno))
        q = p.copy()
        mirror(q)
        outs["mirror_noanno"].append(encap(q, ip_aton("7.7.7.7")))
        ip = p.data
        answered = not (ip[9] == 1 and ip[20] in (3, 4, 5, 11, 12)) and struct.unpack("!H", ip[6:8])[0] & 0x1FFF == 0
        if answered:
            q = port_unreachable(p, ident)
            ident += 1
            fix(q.data, "2.2.2.2")
            mirror(q)
            outs["fix"].append(encap(q))
        outs["nofix"].append(encap(p.copy()))
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)


main()
