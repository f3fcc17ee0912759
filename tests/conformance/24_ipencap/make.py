#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def update_in_cksum(c, old, new):
    """click_update_in_cksum (RFC 1624)."""
    s = (~c & 0xFFFF) + (~old & 0xFFFF) + new
    s = (s & 0xFFFF) + (s >> 16)
    return ~(s + (s >> 16)) & 0xFFFF


class IPEncap:
    """Click's IPEncap: a template header whose checksum is computed at configure time
    (with length, ID and, for DST_ANNO, the destination all zero), then adjusted
    incrementally for each packet."""

    def __init__(self, proto, src, dst, tos=0, ttl=250, df=False):
        self.dst_anno = dst is None
        h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, 0, 0, 0x4000 if df else 0, ttl,
                                  proto, 0, ip_aton(src), bytes(4) if dst is None else ip_aton(dst)))
        h[10:12] = struct.pack("!H", cksum(bytes(h)))
        self.h = h
        self.ident = 0

    def encap(self, p):
        h = bytearray(self.h)
        hw = lambda off: struct.unpack("!H", h[off:off + 2])[0]
        c = hw(10)
        if self.dst_anno:
            h[16:20] = p.dst_anno
            c = update_in_cksum(c, 0, hw(16))
            c = update_in_cksum(c, 0, hw(18))
        h[2:4] = struct.pack("!H", (len(p.data) + 20) & 0xFFFF)
        h[4:6] = struct.pack("!H", self.ident & 0xFFFF)
        self.ident += 1
        c = update_in_cksum(c, 0, hw(2))
        c = update_in_cksum(c, 0, hw(4))
        h[10:12] = struct.pack("!H", c)
        return bytes(h)


def frames():
    f = []
    A = "10.0.0.1"
    for i in range(20):
        dst = ["10.0.0.2", "0.0.0.0", "255.255.255.255", "8.8.8.8", "224.0.0.1"][i % 5]
        if i % 3 == 0:
            pkt = ipv4(A, dst, 17, udp(A, dst, 4000 + i, 53, b"q" * (i * 7)), ident=i)
        elif i % 3 == 1:
            pkt = ipv4(A, dst, 6, tcp(A, dst, 5000 + i, 80, b"t" * (i * 11 + 1)), ident=i, ttl=i)
        else:
            pkt = ipv4(A, dst, 1, icmp(8, 0, struct.pack("!HH", 1, i), b"p" * (i * 3)), ident=i)
        f.append(eth_ip(pkt))
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    f.append(eth_ip(ipv4(A, "10.0.0.2", 6, tcp(A, "10.0.0.2", 1, 2, b"B" * 1460), flags_off=0x4000)))
    f.append(eth_ip(ipv4("192.168.0.1", "172.16.254.3", 50, b"esp"), pad=False))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    encs = {
        "ipip": (IPEncap(4, "18.26.4.24", "140.247.60.147"), "00:00:00:00:00:0a", "00:00:00:00:00:0b", 0x0800),
        "gre_df": (IPEncap(47, "10.0.0.1", "10.0.0.2", tos=184, ttl=64, df=True), "00:00:00:00:00:0a", "00:00:00:00:00:0b", 0x0800),
        "dst_anno": (IPEncap(4, "192.0.2.1", None, tos=(46 << 2) | 1, ttl=1), "00:00:00:00:00:0a", "00:00:00:00:00:0b", 0x0800),
        "ce": (IPEncap(253, "0.0.0.0", "255.255.255.255", tos=(10 << 2) | 3), "00:00:00:00:00:0a", "00:00:00:00:00:0b", 0x86DD),
    }
    outs = {k: [] for k in encs}
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        p.data = p.data[14:]
        for name, (enc, esrc, edst, et) in encs.items():
            q = p.copy()
            if name == "dst_anno":
                q.dst_anno = bytes(q.data[16:20])
            h = enc.encap(q)
            q.data = bytearray(mac(edst) + mac(esrc) + struct.pack("!H", et) + h) + q.data
            assert cksum(h) == 0
            outs[name].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)


main()
