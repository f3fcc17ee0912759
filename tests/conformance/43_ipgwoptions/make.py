#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "10.0.0.2", "10.0.0.9"
MY = ip_aton("192.168.1.1")
ADDRS = (ip_aton("10.1.1.1"), ip_aton("10.2.2.2"), MY)

OPTS = [
    b"",
    bytes([7, 11, 4]) + bytes(8),                         # RR, empty
    bytes([7, 11, 8, 1, 1, 1, 1, 0, 0, 0, 0]),            # RR, one used
    bytes([7, 7, 8, 1, 1, 1, 1]),                         # RR, full
    bytes([1, 1, 7, 7, 4, 0, 0, 0, 0]),                   # NOPs then RR
    bytes([131, 7, 4, 5, 5, 5, 5]),                       # LSRR only: untouched
    bytes([68, 12, 5, 0x03, 10, 3, 3, 3, 0, 0, 0, 0]),    # TS flag 3, not our address
    bytes([68, 8, 9, 0x00, 0, 0, 0, 1]),                  # TS flag 0, full
    bytes([68, 12, 13, 0x21, 1, 1, 1, 1, 0, 0, 0, 1]),    # TS flag 1, full, overflow 2
    bytes([68, 8, 9, 0xF0, 0, 0, 0, 1]),                  # overflow 15: bad
    bytes([68, 8, 3, 0x00, 0, 0, 0, 0]),                  # TS pointer 3: bad
    bytes([68, 8, 5, 0x02, 0, 0, 0, 0]),                  # TS flag 2: bad
    bytes([68, 12, 9, 0x03, 10, 1, 1, 1, 0, 0, 0, 0]),    # flag 3 with no room: bad
    bytes([7, 7, 2, 0, 0, 0, 0]),                         # RR pointer 2: bad
    bytes([7, 7, 5, 0, 0, 0, 0]),                         # RR pointer 5: bad
    bytes([7, 7, 3, 0, 0, 0, 0]),                         # RR pointer 3 (p == 2): bad
    bytes([7, 2, 3]),                                     # RR length 2, p == xlen: ok
    bytes([1, 7, 40]),                                    # length past the header: bad
    bytes([1, 7, 1]),                                     # length 1: bad
    bytes([7, 7, 4, 0, 0, 0, 0, 68, 8, 3, 0, 0, 0, 0]),   # RR done, then bad TS
    bytes([130, 11]) + bytes(9) + bytes([7, 7, 4, 0, 0, 0, 0]),  # security, RR
    bytes([0, 7, 7, 4]),                                  # EOL first
    bytes([1, 1, 1, 7]),                                  # RR type in the last byte
]


def frames():
    f = []
    for i, o in enumerate(OPTS):
        f.append(eth_ip(ipv4(A, B, 17, udp(A, B, 1000, 2000 + i, b"data"), opts=o)))
    # Bad header checksum, RR: fixed by the recomputation.
    f.append(eth_ip(ipv4(A, B, 17, udp(A, B, 1, 2, b"x"), opts=OPTS[1], csum=0x1234)))
    # Bad header checksum, LSRR only: left alone.
    f.append(eth_ip(ipv4(A, B, 17, udp(A, B, 1, 2, b"x"), opts=OPTS[5], csum=0x1234)))
    return f


def gwoptions(p):
    """Returns (port, packet); the bad byte offset goes in anno[17]."""
    d = p.data
    hl = (d[0] & 15) * 4
    if hl <= 20:
        return 0, p
    seen = False
    i = 20
    while i < hl:
        t = d[i]
        if t == 1:
            i += 1
            continue
        if t == 0:
            break
        xl = d[i + 1]
        if xl < 2 or i + xl > hl:
            p.anno[17] = i + 1
            return 1, p
        if t not in (7, 68):
            i += xl
            continue
        seen = True
        ptr = d[i + 2] - 1
        if t == 7:
            if ptr >= 3 and ptr + 4 <= xl:
                d[i + ptr:i + ptr + 4] = MY
                d[i + 2] += 4
            elif ptr != xl:
                p.anno[17] = i + 2
                return 1, p
        else:
            oflw, flg = d[i + 3] >> 4, d[i + 3] & 15
            over = False
            if ptr < 4:
                p.anno[17] = i + 2
                return 1, p
            if flg == 0:
                over = ptr + 4 > xl
                assert over, "time-of-day stamps are not modelled"
            elif flg == 1:
                over = ptr + 8 > xl
                assert over, "time-of-day stamps are not modelled"
            elif flg == 3 and ptr + 8 <= xl:
                assert bytes(d[i + ptr:i + ptr + 4]) not in ADDRS, "not modelled"
            else:
                p.anno[17] = i + 3
                return 1, p
            if over:
                if oflw < 15:
                    d[i + 3] = ((oflw + 1) << 4) | flg
                else:
                    p.anno[17] = i + 3
                    return 1, p
        i += xl
    if seen:
        d[10:12] = b"\0\0"
        d[10:12] = struct.pack("!H", cksum(bytes(d[:hl])))
    return 0, p


def paramprob(p, ident):
    """ICMPError(192.168.1.1, parameterproblem) about p. Every packet sent here
    is answered (unicast addresses, no source route), quoted up to 576 bytes."""
    ip = bytes(p.data)
    ptr = p.anno[17]
    msg = icmp(12, 0, bytes([ptr, 0, 0, 0]), ip[:576 - 28])
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(msg), ident, 0, 200, 1, 0,
                              MY, ip[12:16]))
    h[10:12] = struct.pack("!H", cksum(bytes(h)))
    return Pkt(bytes(h) + msg, BASE_SEC, 0)


def encap(q, dst):
    q.data = bytearray(mac(dst) + mac("00:00:00:00:00:01") + b"\x08\x00") + q.data
    return q


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"ok": [], "bad": [], "paramprob": []}
    drops = 0
    ident = 1
    for p in pkts:
        p.pull(14)
        port, q = gwoptions(p)
        if port == 0:
            outs["ok"].append(encap(q, "00:00:00:00:00:02"))
        else:
            drops += 1
            outs["paramprob"].append(encap(paramprob(q, ident), "00:00:00:00:00:04"))
            ident += 1
            outs["bad"].append(encap(q, "00:00:00:00:00:03"))
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [drops])


main()
