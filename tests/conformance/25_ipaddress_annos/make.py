#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def le16(b, off):
    return struct.unpack("<H", bytes(b[off:off + 2]))[0]


def update_le(b, off, old_hw, new_hw):
    """click_update_in_cksum on a little-endian host (memory-order halfwords)."""
    c = le16(b, off)
    s = (~c & 0xFFFF) + (~old_hw & 0xFFFF) + new_hw
    s = (s & 0xFFFF) + (s >> 16)
    b[off:off + 2] = struct.pack("<H", ~(s + (s >> 16)) & 0xFFFF)


def store_in_header(p, field_off, addr):
    """StoreIPAddress's special case (OFFSET src/dst): p.data starts at the IP header."""
    d = p.data
    o = (le16(d, field_off) + le16(d, field_off + 2))
    o = (o + (o >> 16)) & 0xFFFF
    d[field_off:field_off + 4] = addr
    n = (le16(d, field_off) + le16(d, field_off + 2))
    n = (n + (n >> 16)) & 0xFFFF
    update_le(d, 10, o, n)
    hl = (d[0] & 0xF) * 4
    first = (struct.unpack("!H", d[6:8])[0] & 0x1FFF) == 0
    tl = len(d) - hl
    if d[9] == 6 and first and tl >= 20:
        update_le(d, hl + 16, o, n)
    if d[9] == 17 and first and tl >= 8 and d[hl + 6:hl + 8] != b"\0\0":
        update_le(d, hl + 6, o, n)


def frames():
    f = []
    A, B = "192.168.1.20", "203.0.113.9"
    for i in range(6):
        f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 40000 + i, 443, b"tls" * i, seq=i << 20), ident=i)))
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1, 2, b"badsum", csum=0x0102))))
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1, 2)[:12])))                 # short TCP: no L4 update
    f.append(eth_ip(ipv4(A, B, 6, b"frag-data" * 4, flags_off=0x0010)))   # later fragment
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 3, 4, b"firstfrag" * 3), flags_off=0x2000)))
    for i in range(5):
        f.append(eth_ip(ipv4(A, "8.8.4.4", 17, udp(A, "8.8.4.4", 5300 + i, 53, b"dns" * i))))
    f.append(eth_ip(ipv4(A, "8.8.4.4", 17, udp(A, "8.8.4.4", 5300, 53, b"nocsum", csum=0))))
    f.append(eth_ip(ipv4(A, "8.8.4.4", 17, b"\x00\x35\x00\x35\x00\x08")))   # 6 bytes: no update
    f.append(eth_ip(ipv4("10.255.255.254", "10.0.0.1", 1, icmp(8, 0, b"\0\1\0\1", b"ping"))))
    f.append(eth_ip(ipv4("172.16.1.1", "172.16.2.2", 47, bytes(24), opts=b"\x01\x01\x01\x01")))
    f.append(eth_ip(ipv4("172.16.1.1", "172.16.2.2", 6, tcp("172.16.1.1", "172.16.2.2", 9, 9, b"o"),
                         opts=b"\x94\x04\x00\x00")))
    f.append(eth_ip(ipv4("0.0.0.1", "255.255.255.254", 6, tcp("0.0.0.1", "255.255.255.254", 65535, 65535, b"\xff" * 6))))
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("set_src", "src_to_dst", "store_dst", "store_offset", "store_addr_offset")}
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        eth = bytes(p.data[:14])
        iplen = struct.unpack("!H", p.data[16:18])[0]
        p.data = p.data[14:14 + iplen]             # Strip(14) + CheckIPHeader trim
        src = bytes(p.data[12:16])

        q = p.copy(); store_in_header(q, 12, ip_aton("10.99.0.1"))
        q.data = bytearray(eth) + q.data; outs["set_src"].append(q)

        q = p.copy(); store_in_header(q, 16, src)
        q.data = bytearray(eth) + q.data; outs["src_to_dst"].append(q)

        q = p.copy(); store_in_header(q, 16, ip_aton("192.0.2.77"))
        q.data = bytearray(eth) + q.data; outs["store_dst"].append(q)

        q = p.copy(); q.data = bytearray(eth) + q.data; q.data[6:10] = src
        outs["store_offset"].append(q)

        q = p.copy(); q.data = bytearray(eth) + q.data
        q.data[0:4] = ip_aton("255.1.2.3"); q.data[26:30] = ip_aton("254.4.5.6")
        outs["store_addr_offset"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)


main()
