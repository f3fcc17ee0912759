#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
from socket import inet_pton, AF_INET6
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def a6(s):
    return inet_pton(AF_INET6, s)


def ipv6(src, dst, nxt, payload, hlim=64):
    return struct.pack("!IHBB", 0x60000000, len(payload), nxt, hlim) + a6(src) + a6(dst) + payload


def udpip6_encap(payload, src, sport, dst, dport):
    """Click's UDPIP6Encap::simple_action (RFC 8200 8.1 pseudo-header)."""
    ulen = 8 + len(payload)
    seg = bytearray(struct.pack("!HHHH", sport, dport, ulen, 0) + payload)
    ph = src + dst + struct.pack("!IxxxB", ulen, 17)
    c = cksum(ph + bytes(seg))
    assert c != 0, "no packet of this case sums to zero"
    seg[6:8] = struct.pack("!H", c)
    return struct.pack("!IHBB", 0x60000000, ulen, 17, 255) + src + dst + bytes(seg)


def frames():
    A, B = "2001:db8:1::10", "2001:db8:2::20"
    f = []
    f.append(ether(HOST_B, HOST_A, 0x86DD, ipv6(A, B, 17, struct.pack("!HHHH", 5, 6, 13, 0) + b"hello")))
    f.append(ether(HOST_B, HOST_A, 0x86DD, ipv6(A, "ff02::1", 58, bytes([128, 0, 0, 0, 0, 1, 0, 1]) + b"x" * 31)))
    f.append(ether(HOST_B, HOST_A, 0x86DD, ipv6("fe80::1", "2001:db8:3::3", 6, bytes(20) + b"G" * 1200)))
    f.append(eth_ip(ipv4("10.0.0.1", "10.0.0.2", 17, udp("10.0.0.1", "10.0.0.2", 1, 2, b"four"))))
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    f.append(ether(HOST_B, HOST_A, 0x86DD, ipv6(A, "2001:db8::dead:beef", 59, b"odd")))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"fixed": [], "dst_anno": [], "other": []}
    for p in pkts:
        pl = bytes(p.data[14:])
        if p.data[12:14] == b"\x86\xdd":
            branches = (
                ("fixed", a6("2001:db8::1"), 1234, a6("2001:db8::2"), 4321, "02:00:00:00:00:0a", "02:00:00:00:00:0b"),
                ("dst_anno", a6("2001:db8::1"), 53, bytes(p.data[38:54]), 65535, "02:00:00:00:00:0a", "02:00:00:00:00:0b"),
            )
        else:
            branches = (("other", a6("fe80::1"), 7, a6("fe80::2"), 9, "02:00:00:00:00:0c", "02:00:00:00:00:0d"),)
        for name, s, sp, d, dp, esrc, edst in branches:
            q = p.copy()
            q.data = bytearray(mac(edst) + mac(esrc) + b"\x86\xdd" + udpip6_encap(pl, s, sp, d, dp))
            outs[name].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)


main()
