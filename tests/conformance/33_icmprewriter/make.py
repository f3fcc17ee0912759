#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


A, B, R, G = "192.168.1.10", "192.168.1.11", "198.51.100.5", "203.0.113.1"
N1, N2, NP = "10.0.0.1", "10.0.0.2", "10.0.0.3"


def err(typ, code, inner, src=G, dst=N1):
    """An ICMP error from src to dst quoting `inner` (IP header + 8 bytes or more)."""
    return eth_ip(ipv4(src, dst, 1, icmp(typ, code, b"\0\0\0\0", inner)))


def frames():
    f = []
    # outbound traffic that creates mappings: A -> 10.0.0.1, B -> 10.0.0.2, ping from A
    f.append(eth_ip(ipv4(A, R, 17, udp(A, R, 5000, 53, b"query"))))
    f.append(eth_ip(ipv4(B, R, 6, tcp(B, R, 40000, 80, b"GET"))))
    f.append(eth_ip(ipv4(A, R, 1, icmp(8, 0, b"\0\x42\0\1", b"ping-data"))))
    # errors about the rewritten packets, as the outside would send them
    q_udp = ipv4(N1, R, 17, udp(N1, R, 5000, 53, b"query"))
    q_tcp = ipv4(N2, R, 6, tcp(N2, R, 40000, 80, b"GET"))
    q_ping = ipv4(NP, R, 1, icmp(8, 0, struct.pack("!HH", 1024, 1), b"ping-data"))
    f.append(err(3, 3, q_udp))                           # port unreachable, full UDP
    f.append(err(11, 0, q_tcp[:28], dst=N2))             # time exceeded, 8 TCP bytes
    f.append(err(3, 4, q_tcp, dst=N2))                   # frag needed, whole TCP segment
    f.append(err(12, 0, q_ping, dst=NP))                 # parameter problem about a ping
    f.append(err(4, 0, q_udp[:28], dst="10.9.9.9"))      # outer dst is not the inner src
    f.append(err(5, 1, ipv4(N1, R, 47, bytes(8))))       # GRE inside: addresses only
    nocs = bytearray(q_udp)
    nocs[26:28] = b"\0\0"
    f.append(err(3, 1, bytes(nocs)))                     # UDP checksum 0 stays 0
    f.append(err(3, 1, ipv4("10.0.0.7", R, 17, udp("10.0.0.7", R, 1, 2))))   # unknown: drop
    f.append(eth_ip(ipv4(G, N1, 1, icmp(8, 0, b"\0\1\0\1", b"not-an-error"))))  # drop
    f.append(err(3, 3, q_udp[:20]))                      # too short to hold 8 more bytes
    f.append(err(3, 3, ipv4(N1, R, 17, b"", version=6)[:20] + bytes(8)))     # bad version
    f.append(eth_ip(ipv4(G, N1, 17, udp(G, N1, 1, 2, b"not icmp"))))        # not ICMP: drop
    frag = ipv4(N1, R, 17, b"12345678", flags_off=0x0004)
    f.append(err(3, 3, frag))                            # non-first fragment: no ports
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"out": [], "icmp": []}
    amap = {}       # inside address -> new address (IPAddrRewriter)
    pools = [bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])]
    pings = []      # (inside src, ident, dst, new ident)
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        q = p.copy()
        ip = 14
        q.data = q.data[:ip + be16(q.data, ip + 2)]
        d = q.data
        hl = (d[ip] & 15) * 4
        th = ip + hl
        src, dst = bytes(d[ip + 12:ip + 16]), bytes(d[ip + 16:ip + 20])
        proto = d[ip + 9]
        if src[:2] == bytes([192, 168]):
            if proto == 1 and d[th] == 8:
                ident = be16(d, th + 4)
                nid = 1024 + len(pings)
                pings.append((src, ident, dst, nid))
                new = bytes([10, 0, 0, 3])
                ipd = upd_words(0, words(src), words(new))
                d[ip + 12:ip + 16] = new
                apply_delta(d, ip + 10, ipd, False)
                apply_delta(d, th + 2, upd(0, ident, nid), False)
                put16(d, th + 4, nid)
            else:
                new = amap.setdefault(src, pools[len(amap)])
                ipd = upd_words(0, words(src), words(new))
                d[ip + 12:ip + 16] = new
                apply_delta(d, ip + 10, ipd, False)
                if proto == 6:
                    apply_delta(d, th + 16, ipd, False)
                elif proto == 17 and be16(d, th + 6):
                    apply_delta(d, th + 6, ipd, False)
            outs["out"].append(q)
            continue
        if proto != 1:
            continue
        if d[th] not in (3, 4, 5, 11, 12) or len(d) - th < 28:
            continue
        e = th + 8
        ehl = (d[e] & 15) * 4
        if d[e] >> 4 != 4 or ehl < 20:
            continue
        et = e + ehl
        ep = d[e + 9]
        esrc, edst = bytes(d[e + 12:e + 16]), bytes(d[e + 16:e + 20])
        first = be16(d, e + 6) & 0x1FFF == 0
        Z = b"\0\0\0\0"
        new_saddr = new_daddr = None
        use = False
        sport = dport = 0
        if ep in (6, 17, 33) and et + 8 <= len(d) and first:
            use = True
        if ep == 1 and et + 6 <= len(d) and first and d[et] == 8:
            use = True
        # IPAddrRewriter first (MAPS order): lookup by address; the reply entry of
        # inside host H rewrites to (0.0.0.0, 0, H, 0)
        hit = None
        for h, n in amap.items():
            if n == esrc:
                hit = ("addr", h)
        if hit is None and ep == 1 and use:
            ident = be16(d, et + 4)
            for (h, oid, pdst, nid) in pings:
                if nid == ident and pdst == edst and esrc == bytes([10, 0, 0, 3]):
                    hit = ("ping", (h, oid, pdst))
        if hit is None:
            continue
        if hit[0] == "addr":
            new_saddr, new_daddr, nsport, ndport = Z, hit[1], 0, 0
        else:
            h, oid, pdst = hit[1]
            new_saddr, new_daddr, nsport, ndport = pdst, h, plus1(oid), oid
        old, new = [], []
        if bytes(d[ip + 16:ip + 20]) == esrc:
            o = words(d[ip + 16:ip + 20])
            d[ip + 16:ip + 20] = new_daddr
            put16(d, ip + 10, upd_words(be16(d, ip + 10), o, words(new_daddr)))
        old = [be16(d, e + 10)] + words(esrc) + words(edst)
        d[e + 12:e + 16] = new_daddr
        d[e + 16:e + 20] = new_saddr
        new = [0] + words(new_daddr) + words(new_saddr)
        put16(d, e + 10, upd_words(old[0], old[1:5], new[1:5]))
        new[0] = be16(d, e + 10)
        if use and ep in (6, 17, 33):
            old += [be16(d, et), be16(d, et + 2)]
            put16(d, et, ndport)
            put16(d, et + 2, nsport)
            new += [ndport, nsport]
            off = None
            if ep == 6 and et + 18 <= len(d):
                off = et + 16
            elif ep == 17 and be16(d, et + 6):
                off = et + 6
            if off is not None:
                old.append(be16(d, off))
                put16(d, off, upd_words(be16(d, off), old[1:7], new[1:7]))
                new.append(be16(d, off))
        elif use and ep == 1:
            old.append(be16(d, et + 4))
            put16(d, et + 4, ndport)
            new.append(ndport)
            old.append(be16(d, et + 2))
            c = upd(be16(d, et + 2), old[5], new[5])
            if c == 0 and not any(d[et:]):
                c = 0xFFFF
            put16(d, et + 2, c)
            new.append(c)
        put16(d, th + 2, upd_words(be16(d, th + 2), old, new))
        outs["icmp"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)


main()
