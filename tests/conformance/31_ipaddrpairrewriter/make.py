#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def click_hash(saddr, daddr):
    """The table's hash of a (saddr, 0, daddr, 0) key: addresses read little-endian."""
    rot = lambda v, r: ((v << r) | (v >> (32 - r))) & 0xFFFFFFFF
    sx = struct.unpack("<I", saddr)[0]
    dx = struct.unpack("<I", daddr)[0]
    return rot(sx, 1) ^ rot(dx, 31)


def table_order(entries):
    """Chained hash buckets, one at first; a new entry goes to the head of its chain;
    after a flow is stored, more than two entries per bucket grow the array (1, 3, 7,
    15, ...), relinking each old chain from its head onto the heads of the new chains."""
    buckets = [[]]
    for j in range(len(entries)):
        buckets[click_hash(*entries[j][0]) % len(buckets)].insert(0, j)
        if j % 2 == 1 and j + 1 > 2 * len(buckets):
            n = 1
            while n < len(buckets) + 1:
                n = ((n + 1) << 1) - 1
            nb = [[] for _ in range(n)]
            for chain in buckets:
                for e in chain:
                    nb[click_hash(*entries[e][0]) % n].insert(0, e)
            buckets = nb
    return [e for chain in buckets for e in chain]


A, B, C = "192.168.1.10", "192.168.1.11", "192.168.1.12"
R1, R2, W, LB = "198.51.100.5", "198.51.100.6", "8.8.8.8", "172.16.0.9"
N1, N2 = "10.0.0.1", "10.0.0.2"


def frames():
    f = []
    e = lambda x: f.append(eth_ip(x))
    e(ipv4(A, R1, 6, tcp(A, R1, 40000, 80, b"GET /")))                   # A,R1 -> 10.0.0.1
    e(ipv4(A, R2, 17, udp(A, R2, 5353, 53, b"query")))                   # A,R2 -> 10.0.0.2
    e(ipv4(B, R1, 17, udp(B, R1, 5000, 53, b"q2")))                       # 10.0.0.1 taken for R1
    e(ipv4(C, R1, 1, icmp(8, 0, b"\0\7\0\1", b"ping")))                   # both taken: failure
    e(ipv4(A, R1, 6, tcp(A, R1, 40001, 443, b"other ports, same pair")))
    e(ipv4(R1, N1, 6, tcp(R1, N1, 80, 40000, b"200 OK")))                 # reply -> A
    e(ipv4(R1, N2, 17, udp(R1, N2, 53, 5000, b"answer")))                 # reply -> B
    e(ipv4(R2, N2, 17, udp(R2, N2, 53, 5353, b"nocsum", csum=0)))         # reply -> A, csum 0
    e(ipv4(R2, N1, 17, udp(R2, N1, 1, 2, b"unmapped")))                   # pass
    e(ipv4(A, W, 17, udp(A, W, 7, 7, b"to the server")))                  # dst -> 172.16.0.9
    e(ipv4(LB, A, 17, udp(LB, A, 7, 7, b"from the server")))              # reply: src -> 8.8.8.8
    e(ipv4(A, R1, 6, b"later-fragment" * 2, flags_off=0x0005))           # IP checksum only
    e(ipv4(A, R1, 6, tcp(A, R1, 1, 2)[:12]))                              # short TCP
    e(ipv4(B, R2, 47, bytes(12)))                                         # GRE: 10.0.0.1
    e(ipv4(A, R1, 6, tcp(A, R1, 40000, 80, b"opts"), opts=b"\x01\x01\x01\x01"))
    e(ipv4(R1, N1, 6, tcp(R1, N1, 80, 40000, b"bad", csum=0xBEEF)))       # bad csum kept bad
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"out": [], "in": [], "pass": []}
    pool = [bytes([10, 0, 0, n]) for n in (1, 2)]
    nxt = 0
    flows = []          # [(sa, da), (sa', da'), input]
    keys = {}           # key -> (flow, direction)
    entries = []        # (key, flow, direction), insertion order
    fails = 0
    counts = [0, 0, 0]
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        q = p.copy()
        ip = 14
        q.data = q.data[:ip + be16(q.data, ip + 2)]
        d = q.data
        hl = (d[ip] & 15) * 4
        src, dst = bytes(d[ip + 12:ip + 16]), bytes(d[ip + 16:ip + 20])
        if src[:2] == bytes([192, 168]):
            port = 0 if dst[:3] == bytes([198, 51, 100]) else 2
        else:
            port = 1
        hit = keys.get((src, dst))
        if hit is None:
            if port == 1:
                outs["pass"].append(q)
                continue
            if port == 0:
                new = None
                for k in range(2):
                    c = (nxt + k) % 2
                    if (dst, pool[c]) not in keys:
                        new = (pool[c], dst)
                        nxt = c + 1
                        break
                if new is None:
                    fails += 1
                    continue
            else:
                new = (src, bytes([172, 16, 0, 9]))
            flows.append(((src, dst), new, port))
            i = len(flows) - 1
            keys[(src, dst)] = (i, 0)
            keys[(new[1], new[0])] = (i, 1)
            entries.append(((src, dst), i, 0))
            entries.append(((new[1], new[0]), i, 1))
            counts[port] += 1
            hit = (i, 0)
        i, reply = hit
        (o_s, o_d), (n_s, n_d), _ = flows[i]
        ipd = 0
        for a, b in zip(words(o_s + o_d), words(n_s + n_d)):
            ipd = upd(ipd, a, b)
        if reply:
            d[ip + 12:ip + 16], d[ip + 16:ip + 20] = o_d, o_s
        else:
            d[ip + 12:ip + 16], d[ip + 16:ip + 20] = n_s, n_d
        apply_delta(d, ip + 10, ipd, reply)
        tl = len(d) - ip - hl
        first = be16(d, ip + 6) & 0x1FFF == 0
        if first and d[ip + 9] == 6 and tl >= 18:
            apply_delta(d, ip + hl + 16, ipd, reply)
        elif first and d[ip + 9] == 17 and tl >= 8 and be16(d, ip + hl + 6):
            apply_delta(d, ip + hl + 6, ipd, reply)
        outs["in" if reply else "out"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    ip_s = lambda a: ".".join(str(x) for x in a)
    lines = ["%d" % len(flows), "%d" % len(flows), "%d" % fails,
             "10.0.0.1-10.0.0.2 - [%d]" % counts[0], "<nochange>",
             "- 172.16.0.9 [%d]" % counts[2]]
    for j in table_order(entries):
        key, i, dirn = entries[j]
        (o_s, o_d), (n_s, n_d), inp = flows[i]
        other = (n_d, n_s) if dirn == 0 else (o_s, o_d)
        ports = "[*0 1]" if dirn == 0 else "[0 *1]"
        lines.append("(%s, %s) => (%s, %s) %s i%d exp600" % (
            ip_s(key[0]), ip_s(key[1]), ip_s(other[1]), ip_s(other[0]), ports, inp))
    write_text(os.path.join(HERE, "expected.txt"), lines)


main()
