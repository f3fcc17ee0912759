#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "10.0.0.1", "10.0.0.2"
LSRR = bytes([131, 11, 4]) + ip_aton("10.9.9.1") + ip_aton("10.9.9.2")


def corrupt(frame, off, val=0xDEAD):
    f = bytearray(frame)
    f[off:off + 2] = struct.pack("!H", val)
    return bytes(f)


def zero_sum_payload(src, dst, body):
    """UDP payload (body + 2 bytes) whose UDP checksum computes to 0x0000."""
    assert len(body) % 2 == 0
    seg = struct.pack("!HHHH", 7, 9, 8 + len(body) + 2, 0) + body + b"\0\0"
    ph = ip_aton(src) + ip_aton(dst) + struct.pack("!BBH", 0, 17, len(seg))
    s = fold(sum16(ph + seg))
    return body + struct.pack("!H", 0xFFFF - s)


def frames():
    out = []
    # TCP: checksums corrupted in several ways (IP checksum at 24, TCP at 14+hl+16).
    for i, pl in enumerate((b"", b"a", b"hello", b"x" * 101, b"\xff" * 64, bytes(range(256)))):
        ip = ipv4(A, B, 6, tcp(A, B, 1000 + i, 80, pl, seq=i * 7777), ident=i)
        f = eth_ip(ip)
        if i % 2:
            f = corrupt(f, 24)
        f = corrupt(f, 14 + 20 + 16, [0, 0xFFFF, 0x1234, 0x0001, 0xABCD, 0x8000][i])
        out.append(f)
    # TCP with source-route options: pseudo-header dst is the final hop.
    for opts in (b"\x01" + LSRR, bytes([137]) + LSRR[1:] + b"\x00", b"\x00\x00\x00\x00" + b"\x01" + LSRR,
                 b"\x94\x04\x00\x00"):
        ip = ipv4(A, "10.9.9.1", 6, tcp(A, B, 2222, 22, b"ssh-data", csum=0x5555), opts=opts, ident=77)
        out.append(corrupt(eth_ip(ip), 24, 0))
    # TCP with bad lengths: IP total length beyond the frame; segment shorter than 20.
    out.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1, 2, b"z" * 30), total_len=20 + 20 + 130)))
    out.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1, 2)[:12])))
    # TCP runt padded by Ethernet (IP total length 40 in a 60-byte frame).
    out.append(corrupt(eth_ip(ipv4(A, B, 6, tcp(A, B, 5, 6, flags=0x02, seq=1))), 50, 0x0F0F))
    # UDP.
    for i, pl in enumerate((b"", b"q", b"dns-query", b"y" * 333, bytes(range(200)))):
        ip = ipv4("172.16.0.5", "172.16.9.9", 17, udp("172.16.0.5", "172.16.9.9", 53, 3000 + i, pl,
                                                       csum=[0, 0xFFFF, 0x1111, 0x2222, 0][i]), ident=0x300 + i)
        out.append(corrupt(eth_ip(ip), 24, 0x4444) if i % 2 else eth_ip(ip))
    # UDP whose correct checksum is 0x0000 (Click stores it as computed).
    body = zero_sum_payload("172.16.0.5", "172.16.9.9", b"zero-sum")
    out.append(eth_ip(ipv4("172.16.0.5", "172.16.9.9", 17,
                           udp("172.16.0.5", "172.16.9.9", 7, 9, body, csum=0x1111))))
    # UDP with LSRR option.
    out.append(eth_ip(ipv4(A, "10.9.9.1", 17, udp(A, B, 1, 2, b"routed", csum=0x7777), opts=b"\x01" + LSRR)))
    # UDP length shorter than the IP payload (trailing bytes not covered); and uh_ulen 4.
    out.append(eth_ip(ipv4(A, B, 17, udp(A, B, 10, 11, b"abcdefgh", ulen=12, csum=0x9999))))
    out.append(eth_ip(ipv4(A, B, 17, udp(A, B, 10, 11, b"abcd", ulen=4, csum=0x9999))))
    # UDP to output 1: fragments (MF; offset), UDP length beyond the packet, too short.
    out.append(eth_ip(ipv4(A, B, 17, udp(A, B, 1, 2, b"f" * 40, csum=0x0101), flags_off=0x2000)))
    out.append(eth_ip(ipv4(A, B, 17, b"g" * 40, flags_off=0x0005)))
    out.append(eth_ip(ipv4(A, B, 17, udp(A, B, 1, 2, b"h" * 10, ulen=200, csum=0x0202))))
    out.append(eth_ip(ipv4(A, B, 17, b"\x00\x01\x00\x02"), pad=False))
    # Other IP: ICMP/GRE with corrupted IP checksums; bad header lengths; a runt.
    out.append(corrupt(eth_ip(ipv4(A, B, 1, icmp(8, 0, b"\0\1\0\1", b"ping"))), 24, 0))
    out.append(corrupt(eth_ip(ipv4(A, B, 47, b"\0\0\x08\0" + b"G" * 20, opts=b"\x01\x01\x01\x00")), 24, 0xFFFF))
    out.append(eth_ip(ipv4(A, B, 47, b"G" * 20, hl=4)))
    out.append(eth_ip(ipv4(A, B, 47, b"G" * 20, hl=15)))
    out.append(eth_ip(ipv4(A, B, 89, b"O" * 4)[:10], pad=False))
    out.append(eth_ip(ipv4(A, B, 89, b"O" * 44, hl=15, csum=3)))
    # Non-IP.
    out.append(ether(HOST_B, HOST_A, 0x86DD, bytes(40)))
    return out


def set_tcp(p):
    d, nh, th = p.data, p.nh, p.th
    hl = (d[nh] & 0xF) * 4
    iplen = struct.unpack("!H", d[nh + 2:nh + 4])[0]
    plen = (iplen - hl) & 0xFFFFFFFF
    if plen < 20 or plen > len(d) - th:
        return False
    d[th + 16:th + 18] = b"\0\0"
    c = l4_cksum(bytes(d[nh:nh + hl]), bytes(d[th:th + plen]))
    d[th + 16:th + 18] = struct.pack("!H", c)
    return True


def set_udp(p):
    d, nh, th = p.data, p.nh, p.th
    off = struct.unpack("!H", d[nh + 6:nh + 8])[0]
    tl = len(d) - th
    if off & 0x3FFF or tl < 8:
        return 1
    ulen = struct.unpack("!H", d[th + 4:th + 6])[0]
    if tl < ulen:
        return 1
    hl = (d[nh] & 0xF) * 4
    d[th + 6:th + 8] = b"\0\0"
    c = l4_cksum(bytes(d[nh:nh + hl]), bytes(d[th:th + ulen]), ulen)
    d[th + 6:th + 8] = struct.pack("!H", c)
    return 0


def set_ip(p, nh):
    d = p.data
    plen = len(d) - nh
    if plen < 20:
        return False
    hl = (d[nh] & 0xF) * 4
    if hl < 20 or hl > plen:
        return False
    d[nh + 10:nh + 12] = b"\0\0"
    d[nh + 10:nh + 12] = struct.pack("!H", cksum(bytes(d[nh:nh + hl])))
    return True


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"tcp": [], "udp": [], "udp_unchanged": [], "other_ip": []}
    drops = {"sit": 0, "siu": 0, "sio": 0}
    for p in pkts:
        d = p.data
        ip = len(d) >= 14 and d[12:14] == b"\x08\x00"
        if ip and len(d) > 23 and d[23] == 6:
            p.mark_ip(14)
            if set_tcp(p):
                if set_ip(p, 14):
                    outs["tcp"].append(p)
                else:
                    drops["sit"] += 1
        elif ip and len(d) > 23 and d[23] == 17:
            p.mark_ip(14)
            if set_udp(p):
                outs["udp_unchanged"].append(p)
            elif set_ip(p, 14):
                outs["udp"].append(p)
            else:
                drops["siu"] += 1
        elif ip:
            if set_ip(p, 14):   # Strip(14) then the packet start; Unstrip(14) restores
                outs["other_ip"].append(p)
            else:
                drops["sio"] += 1
    z = [q for q in outs["udp"] if b"zero-sum" in q.data]
    assert len(z) == 1 and z[0].data[40:42] == b"\0\0", "zero-sum UDP packet"
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [drops["sit"], drops["siu"], drops["sio"]])


main()
