#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def udpip_encap(payload, src, sport, dst, dport, csum, ident):
    """Click's UDPIPEncap::simple_action."""
    total = 28 + len(payload)
    iph = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, total & 0xFFFF, ident & 0xFFFF, 0,
                                250, 17, 0, src, dst))
    iph[10:12] = struct.pack("!H", cksum(bytes(iph)))
    ulen = (total - 20) & 0xFFFF
    seg = bytearray(struct.pack("!HHHH", sport, dport, ulen, 0) + payload)
    if csum:
        seg[6:8] = struct.pack("!H", l4_cksum(bytes(iph), bytes(seg), ulen))
    return bytes(iph) + bytes(seg)


def zero_trailer(frame):
    """Append 2 bytes so that branch 0's UDP checksum (over frame[14:]) comes out 0x0000."""
    pl = frame[14:] + b"\0\0"
    if len(pl) % 2:
        pl = frame[14:] + b"\0\0\0"
    seg = struct.pack("!HHHH", 1234, 4321, 8 + len(pl), 0) + pl
    ph = ip_aton("10.1.1.1") + ip_aton("10.2.2.2") + struct.pack("!BBH", 0, 17, len(seg))
    s = fold(sum16(ph + seg))
    return frame + pl[len(frame) - 14:len(pl) - 2] + struct.pack("!H", 0xFFFF - s)


def frames():
    f = []
    A, B = "10.0.0.1", "10.0.0.2"
    f.append(eth_ip(ipv4(A, B, 17, udp(A, B, 1, 2, b"hello"))))
    f.append(eth_ip(ipv4(A, "8.8.8.8", 6, tcp(A, "8.8.8.8", 3333, 53, b"odd"))))
    f.append(eth_ip(ipv4(A, "224.0.0.9", 17, udp(A, "224.0.0.9", 520, 520, b"r" * 24))))
    f.append(eth_ip(ipv4("192.168.1.50", "93.184.216.34", 6,
                         tcp("192.168.1.50", "93.184.216.34", 50000, 80, b"G" * 1200))))
    f.append(zero_trailer(eth_ip(ipv4(A, B, 17, udp(A, B, 7, 7, b"zero-sum-me")), pad=False)))
    f.append(eth_ip(ipv4(A, "255.255.255.255", 17, udp(A, "255.255.255.255", 68, 67, bytes(240)))))
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    f.append(eth_ip(ipv4(A, B, 1, icmp(8, 0, b"\0\1\0\1", b"x" * 31))))
    f.append(eth_ip(ipv4("172.31.255.254", "1.2.3.4", 47, bytes(7)), pad=False))
    for i in range(12):
        dst = "10.%d.%d.%d" % (i, i * 3, 255 - i)
        f.append(eth_ip(ipv4(A, dst, 17, udp(A, dst, 1000 + i, 2000, bytes([i]) * (i * 5)))))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"csum": [], "nocsum": [], "dst_anno": []}
    ids = [0, 0, 0]
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        pl = bytes(p.data[14:])
        branches = (
            ("csum", ip_aton("10.1.1.1"), 1234, ip_aton("10.2.2.2"), 4321, True, "00:00:00:00:00:0a", "00:00:00:00:00:0b"),
            ("nocsum", ip_aton("192.168.100.1"), 53, ip_aton("192.168.200.2"), 65535, False, "00:00:00:00:00:0a", "00:00:00:00:00:0b"),
            ("dst_anno", ip_aton("172.16.0.1"), 5000, bytes(p.data[30:34]), 6000, True, "02:02:02:02:02:02", "04:04:04:04:04:04"),
        )
        for i, (name, s, sp, d, dp, cs, esrc, edst) in enumerate(branches):
            q = p.copy()
            q.data = bytearray(mac(edst) + mac(esrc) + b"\x08\x00" + udpip_encap(pl, s, sp, d, dp, cs, ids[i]))
            ids[i] += 1
            outs[name].append(q)
    z = outs["csum"][4].data
    assert z[14 + 20 + 6:14 + 20 + 8] == b"\0\0", "zero-sum packet"
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)


main()
