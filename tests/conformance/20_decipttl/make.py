#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def ident_for_csum(src, dst, proto, payload, ttl, target):
    """An IP ID that makes the (valid) header checksum equal target."""
    for ident in range(0x10000):
        h = ipv4(src, dst, proto, payload, ttl=ttl, ident=ident)
        if struct.unpack("!H", h[10:12])[0] == target:
            return ident
    raise ValueError(target)


def frames():
    out = []
    pl = udp("10.0.0.1", "10.0.0.2", 5000, 53, b"query")
    for ttl in (0, 1, 2, 3, 64, 128, 255):
        out.append(eth_ip(ipv4("10.0.0.1", "10.0.0.2", 17, pl, ttl=ttl, ident=0x100 + ttl)))
    # Valid checksums whose value sits on the edges of the incremental update.
    for target in (0x0000, 0x0001, 0x00FF, 0x0100, 0x0101, 0xFEFF, 0xFF00, 0xFFFE):
        ident = ident_for_csum("192.168.1.7", "8.8.8.8", 6, b"", 77, target)
        seg = tcp("192.168.1.7", "8.8.8.8", 40000 + target % 1000, 443, flags=0x02)
        out.append(eth_ip(ipv4("192.168.1.7", "8.8.8.8", 6, seg, ttl=77, ident=ident)))
    # Corrupt checksums: DecIPTTL does not verify, it only adjusts.
    for bad in (0x0000, 0xFFFF, 0x00FF, 0xFEFF, 0x0100, 0x1234):
        out.append(eth_ip(ipv4("10.1.1.1", "10.2.2.2", 1, icmp(8, 0, b"\0\1\0\2"), ttl=9, csum=bad)))
    out.append(eth_ip(ipv4("10.1.1.1", "10.2.2.2", 1, icmp(8, 0, b"\0\1\0\3"), ttl=1, csum=0xBEEF)))
    # Multicast and broadcast destinations.
    for dst, ttl in (("224.0.0.5", 1), ("224.0.0.5", 64), ("239.1.2.3", 0), ("239.1.2.3", 2),
                     ("255.255.255.255", 1), ("255.255.255.255", 64), ("223.255.255.255", 5),
                     ("240.0.0.1", 1)):
        u = udp("10.0.0.9", dst, 520, 520, b"rip" * 5)
        out.append(eth_ip(ipv4("10.0.0.9", dst, 17, u, ttl=ttl), dst="01:00:5e:00:00:05"))
    # IP options (header length 24) and a large packet.
    out.append(eth_ip(ipv4("10.3.3.3", "10.4.4.4", 17, udp("10.3.3.3", "10.4.4.4", 1, 2, b"x" * 10),
                           ttl=33, opts=b"\x94\x04\x00\x00")))
    out.append(eth_ip(ipv4("10.3.3.3", "10.4.4.4", 6, tcp("10.3.3.3", "10.4.4.4", 80, 8080, b"A" * 1400),
                           ttl=200, flags_off=0x4000)))
    # Non-IP: dropped by the Classifier.
    out.append(ether("ff:ff:ff:ff:ff:ff", HOST_A, 0x0806, bytes(28)))
    return out


def is_multicast(a):
    return (a[0] & 0xF0) == 0xE0


def dectl(p, multicast):
    """Returns (port, packet) as Click's DecIPTTL::simple_action."""
    ip = p.nh
    if not multicast and is_multicast(p.data[ip + 16:ip + 20]):
        return 0, p
    if p.data[ip + 8] <= 1:
        return 1, p
    p.data[ip + 8] -= 1
    old = struct.unpack("!H", p.data[ip + 10:ip + 12])[0]
    s = (~old & 0xFFFF) + 0xFEFF
    new = ~((s + (s >> 16)) & 0xFFFF) & 0xFFFF
    p.data[ip + 10:ip + 12] = struct.pack("!H", new)
    return 0, p


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"forward": [], "expired": [], "forward_nomc": [], "expired_nomc": []}
    drops = [0, 0]
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        p.mark_ip(14)
        for i, (mc, fw, ex) in enumerate(((True, "forward", "expired"),
                                          (False, "forward_nomc", "expired_nomc"))):
            port, q = dectl(p.copy(), mc)
            if port:
                drops[i] += 1
            outs[ex if port else fw].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), drops)


main()
