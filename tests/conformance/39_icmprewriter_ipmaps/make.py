#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


H1, H2 = "192.168.1.10", "192.168.1.11"
R, G, NAT = "198.51.100.5", "203.0.113.1", "10.0.0.1"


def err(typ, code, inner, src, dst):
    return eth_ip(ipv4(src, dst, 1, icmp(typ, code, b"\0\0\0\0", inner)))


def frames():
    f = []
    e = lambda x: f.append(eth_ip(x))
    e(ipv4(H1, R, 17, udp(H1, R, 5000, 53, b"query")))                 # -> 10.0.0.1:1024
    e(ipv4(H2, R, 6, tcp(H2, R, 40000, 80, b"GET /")))                 # -> 10.0.0.1:1025
    e(ipv4(R, NAT, 17, udp(R, NAT, 53, 1024, b"answer")))              # -> H1:5000
    e(ipv4(H1, R, 17, udp(H1, R, 5001, 53, b"nocsum", csum=0)))        # -> 10.0.0.1:1026
    # The outside's errors about what left the NAT.
    q_udp = ipv4(NAT, R, 17, udp(NAT, R, 1024, 53, b"query"))
    q_tcp = ipv4(NAT, R, 6, tcp(NAT, R, 1025, 80, b"GET /"))
    q_nocs = ipv4(NAT, R, 17, udp(NAT, R, 1026, 53, b"nocsum", csum=0))
    f.append(err(3, 3, q_udp, R, NAT))                 # port unreachable, whole datagram
    f.append(err(11, 0, q_tcp[:28], G, NAT))           # time exceeded, 8 TCP bytes
    f.append(err(3, 4, q_tcp, G, NAT))                 # needfrag, TCP checksum included
    f.append(err(12, 0, q_nocs, G, NAT))               # parameter problem, UDP csum 0
    f.append(err(4, 0, q_udp[:28], G, "10.0.0.99"))    # outer dst is not the quoted src
    # An inside host's errors about what it received from the outside.
    q_in_udp = ipv4(R, H1, 17, udp(R, H1, 53, 5000, b"answer"))
    q_in_tcp = ipv4(R, H2, 6, tcp(R, H2, 80, 40000, b"200 OK"))
    f.append(err(3, 3, q_in_udp, H1, R))               # port unreachable from H1
    f.append(err(3, 1, q_in_tcp[:28], H2, R))          # host unreachable from H2
    f.append(err(5, 1, q_in_tcp, H2, G))               # redirect; outer dst stays
    # Dropped: a TCP quote with the UDP flow's ports, ICMP and DCCP quotes, an unknown
    # flow, a later fragment, a non-error, a quote too short.
    f.append(err(3, 3, ipv4(NAT, R, 6, tcp(NAT, R, 1024, 53)), R, NAT))
    f.append(err(3, 3, ipv4(NAT, R, 1, icmp(8, 0, b"\x04\x00\0\1", b"ping")), R, NAT))
    f.append(err(3, 3, ipv4(NAT, R, 33, struct.pack("!HH", 1024, 53) + bytes(12)), R, NAT))
    f.append(err(3, 3, ipv4(NAT, R, 17, udp(NAT, R, 2000, 53, b"x")), R, NAT))
    f.append(err(3, 3, ipv4(NAT, R, 17, b"12345678", flags_off=0x0004), R, NAT))
    e(ipv4(R, NAT, 1, icmp(8, 0, b"\0\1\0\1", b"not-an-error")))
    f.append(err(3, 3, q_udp[:20], R, NAT))
    e(ipv4(H1, R, 17, udp(H1, R, 5000, 53, b"again")))                # still 10.0.0.1:1024
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"out": [], "in": [], "icmp_out": [], "icmp_in": []}
    maps = {6: {}, 17: {}}      # key (sa, sp, da, dp) -> (flow, direction)
    flows = []                  # (orig key, rewritten key)
    nxt = [1024]
    nat = bytes([10, 0, 0, 1])

    def flow_for(proto, key, may_create):
        hit = maps[proto].get(key)
        if hit is None and may_create:
            sa, sp, da, dp = key
            while (da, dp, nat, nxt[0]) in maps[proto]:
                nxt[0] += 1
            new = (nat, nxt[0], da, dp)
            nxt[0] += 1
            flows.append((key, new))
            i = len(flows) - 1
            maps[proto][key] = (i, 0)
            maps[proto][(da, dp, nat, new[1])] = (i, 1)
            hit = (i, 0)
        return hit

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
        if proto in (6, 17) and (src[:2] == bytes([192, 168]) or dst == nat):
            key = (src, be16(d, th), dst, be16(d, th + 2))
            hit = flow_for(proto, key, src[:2] == bytes([192, 168]))
            if hit is None:
                continue
            i, reply = hit
            (o_sa, o_sp, o_da, o_dp), (n_sa, n_sp, n_da, n_dp) = flows[i]
            ipd = upd_words(0, words(o_sa) + words(o_da), words(n_sa) + words(n_da))
            l4d = upd(upd(ipd, o_sp, n_sp), o_dp, n_dp)
            if reply:
                d[ip + 16:ip + 20] = o_sa
                put16(d, th + 2, o_sp)
            else:
                d[ip + 12:ip + 16] = n_sa
                put16(d, th, n_sp)
            apply_delta(d, ip + 10, ipd, reply)
            if proto == 6:
                apply_delta(d, th + 16, l4d, reply)
            elif be16(d, th + 6):
                apply_delta(d, th + 6, l4d, reply)
            outs["in" if reply else "out"].append(q)
            continue
        if proto != 1:
            continue
        # ICMPRewriter(rw:0)
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
        use = ep in (6, 17, 33) and et + 8 <= len(d) and first
        search = (edst, be16(d, et + 2) if use else 0, esrc, be16(d, et) if use else 0)
        hit = maps[ep].get(search) if ep in (6, 17) else None
        if hit is None:
            continue
        i, reply = hit
        # the entry's rewritten flow: the reverse of the other entry's key
        fwd_key, new_fwd = flows[i]
        if reply:
            n_sa, n_sp, n_da, n_dp = new_fwd[2], new_fwd[3], fwd_key[0], fwd_key[1]
        else:
            n_sa, n_sp, n_da, n_dp = new_fwd
        if bytes(d[ip + 16:ip + 20]) == search[2]:
            o = words(d[ip + 16:ip + 20])
            d[ip + 16:ip + 20] = n_da
            put16(d, ip + 10, upd_words(be16(d, ip + 10), o, words(n_da)))
        old = [be16(d, e + 10)] + words(esrc) + words(edst)
        d[e + 12:e + 16] = n_da
        d[e + 16:e + 20] = n_sa
        new = [0] + words(n_da) + words(n_sa)
        put16(d, e + 10, upd_words(old[0], old[1:5], new[1:5]))
        new[0] = be16(d, e + 10)
        if use:
            old += [be16(d, et), be16(d, et + 2)]
            put16(d, et, n_dp)
            put16(d, et + 2, n_sp)
            new += [n_dp, n_sp]
            off = None
            if ep == 6 and et + 18 <= len(d):
                off = et + 16
            elif ep == 17 and be16(d, et + 6):
                off = et + 6
            if off is not None:
                old.append(be16(d, off))
                put16(d, off, upd_words(be16(d, off), old[1:7], new[1:7]))
                new.append(be16(d, off))
        put16(d, th + 2, upd_words(be16(d, th + 2), old, new))
        outs["icmp_in" if reply else "icmp_out"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [len(flows)])


main()
