#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "192.168.5.10", "10.20.30.40"


def with_sum16(seg, off, val):
    s = bytearray(seg)
    s[off:off + 2] = struct.pack("!H", val)
    return bytes(s)


def tcp_zero_csum_payload():
    """A TCP payload that makes the right checksum 0x0000 (so 0xFFFF is equivalent)."""
    base = tcp(A, B, 7, 7, b"pad!\0\0", csum=0)
    ph = ip_aton(A) + ip_aton(B) + struct.pack("!BBH", 0, 6, len(base))
    s = fold(sum16(ph + base))
    return b"pad!" + struct.pack("!H", 0xFFFF - s)


def frames():
    f = []
    T = lambda seg, **kw: f.append(eth_ip(ipv4(A, B, 6, seg, **kw)))
    U = lambda seg, **kw: f.append(eth_ip(ipv4(A, B, 17, seg, **kw)))
    I = lambda msg, **kw: f.append(eth_ip(ipv4(A, B, 1, msg, **kw)))
    # TCP
    T(tcp(A, B, 1025, 80, flags=0x02))
    T(tcp(A, B, 1025, 80, b"GET / HTTP/1.0\r\n\r\n"))
    T(tcp(A, B, 1025, 80, b"odd"))
    T(tcp(A, B, 1025, 80, b"x" * 100, csum=0xBAD0))
    T(tcp(A, B, 1026, 443, opts=b"\x02\x04\x05\xb4\x01\x03\x03\x07", flags=0x02))
    T(tcp(A, B, 1026, 443, opts=b"\x02\x04\x05\xb4", flags=0x02, csum=0))
    s = tcp(A, B, 7, 7, tcp_zero_csum_payload())
    assert s[16:18] == b"\0\0"
    T(s)
    T(with_sum16(s, 16, 0xFFFF))                       # same sum, other zero: accepted
    seg = bytearray(tcp(A, B, 9, 9, b"y" * 8))
    seg[12] = 0x40                                      # data offset 4 (< 20 bytes)
    T(bytes(seg))
    seg = bytearray(tcp(A, B, 9, 9, b"y" * 8))
    seg[12] = 0x80                                      # data offset 8 (32 > 28 bytes)
    T(bytes(seg))
    T(tcp(A, B, 9, 9)[:16])                             # segment shorter than a header
    # UDP
    U(udp(A, B, 5353, 53, b"\x12\x34\x01\x00"))
    U(udp(A, B, 5353, 53, b"odd"))
    U(udp(A, B, 5353, 53, b"nocsum", csum=0))
    U(udp(A, B, 5353, 53, b"badcsum", csum=0x0BAD))
    U(udp(A, B, 5353, 53, b"short-ulen-ok---", ulen=12))
    U(udp(A, B, 5353, 53, b"short-ulen-bad--", ulen=12, csum=0x1357))
    U(udp(A, B, 5353, 53, b"tiny", ulen=6, csum=0))
    U(udp(A, B, 5353, 53, b"long", ulen=40, csum=0))
    U(b"\x00\x35\x00")                                  # 3 bytes of UDP
    # ICMP
    I(icmp(8, 0, b"\x00\x07\x00\x01", b"abcdefgh"))
    I(icmp(0, 0, b"\x00\x07\x00\x01", b"odd-length"))
    I(icmp(8, 0, b"\x00\x07\x00\x02", b"abcdefgh", csum=0x1111))
    inner = ipv4(B, A, 17, udp(B, A, 53, 5353, b""))[:28]
    I(icmp(3, 3, b"\0\0\0\0", inner))                   # unreachable with 28 bytes: ok
    I(icmp(3, 3, b"\0\0\0\0", inner[:27]))              # 1 byte short
    I(icmp(11, 0, b"\0\0\0\0", inner + b"more"))
    I(icmp(5, 1, ip_aton("10.0.0.254"), inner[:20]))     # redirect, too short
    I(icmp(13, 0, b"\0\1\0\1", bytes(12)))              # timestamp: exactly 20 bytes
    I(icmp(14, 0, b"\0\1\0\1", bytes(16)))              # timestamp reply: too long
    I(icmp(15, 0, b"\0\1\0\1"))                         # info request: exactly 8
    I(icmp(16, 0, b"\0\1\0\1", b"xxxx"))                # info reply: too long
    I(icmp(9, 0, b"\1\0\0\x1e", bytes(8)))              # router advert, any length
    I(b"\x08\x00\xf7")                                  # 3 bytes of ICMP
    # Other protocols
    f.append(eth_ip(ipv4(A, B, 47, b"\0\0\x08\0" + bytes(20))))
    f.append(eth_ip(ipv4(A, B, 89, bytes(30))))
    f.append(eth_ip(ipv4(A, B, 50, bytes(40))))
    # Non-IP
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    return f


def check_tcp(d):
    hl = (d[0] & 0xF) * 4
    ln = struct.unpack("!H", d[2:4])[0] - hl
    thl = (d[hl + 12] >> 4) * 4 if len(d) > hl + 12 else 0
    if thl < 20 or ln < thl or len(d) < ln + hl:
        return "bad packet length"
    if l4_verify(bytes(d[:hl]), bytes(d[hl:]), ln) != 0:
        return "bad TCP checksum"
    return None


def check_udp(d):
    hl = (d[0] & 0xF) * 4
    ln = struct.unpack("!H", d[hl + 4:hl + 6])[0] if len(d) >= hl + 6 else 0
    if ln < 8 or len(d) < ln + hl:
        return "bad packet length"
    if d[hl + 6:hl + 8] != b"\0\0" and l4_verify(bytes(d[:hl]), bytes(d[hl:]), ln) != 0:
        return "bad UDP checksum"
    return None


def check_icmp(d):
    hl = (d[0] & 0xF) * 4
    n = len(d) - hl
    if n < 8:
        return "bad packet length"
    t = d[hl]
    if t in (3, 11, 12, 4, 5) and n < 36:
        return "bad packet length"
    if t in (13, 14) and n != 20:
        return "bad packet length"
    if t in (15, 16) and n != 8:
        return "bad packet length"
    if cksum(bytes(d[hl:])) != 0:
        return "bad ICMP checksum"
    return None


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("tcp_ok", "tcp_bad", "udp_ok", "udp_bad", "icmp_ok", "icmp_bad")}
    tcp_r = ["not TCP", "bad packet length", "bad TCP checksum"]
    udp_r = ["not UDP", "bad packet length", "bad UDP checksum"]
    det = {"tcp": dict.fromkeys(tcp_r, 0), "udp": dict.fromkeys(udp_r, 0)}
    ci = nt = nu = ni = 0
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        eth = bytes(p.data[:14])
        iplen = struct.unpack("!H", p.data[16:18])[0]
        d = p.data[14:14 + iplen]          # CheckIPHeader trims to the IP length
        p.data = bytearray(eth) + d
        proto = d[9]
        if proto == 6:
            r = check_tcp(d)
            if r:
                det["tcp"][r] += 1
            outs["tcp_bad" if r else "tcp_ok"].append(p)
        elif proto == 17:
            r = check_udp(d)
            if r:
                det["udp"][r] += 1
            outs["udp_bad" if r else "udp_ok"].append(p)
        elif proto == 1:
            r = check_icmp(d)
            ci += bool(r)
            outs["icmp_bad" if r else "icmp_ok"].append(p)
        else:
            nt += 1
            nu += 1
            ni += 1
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    lines = [sum(det["tcp"].values())]
    lines += ["%d\t%s" % (det["tcp"][r], r) for r in tcp_r]
    lines += [sum(det["udp"].values())]
    lines += ["%d\t%s" % (det["udp"][r], r) for r in udp_r]
    lines += [ci, nt, nu, ni]
    write_text(os.path.join(HERE, "expected.txt"), lines)


main()
