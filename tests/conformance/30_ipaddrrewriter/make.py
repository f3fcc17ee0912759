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


Z = b"\0\0\0\0"


def table_order(entries):
    """The order the table handler lists entries in: chained hash buckets, one bucket
    at first; a new entry goes to the head of its chain; after a flow is stored, more
    than two entries per bucket grow the array (1, 3, 7, 15, ...), relinking each old
    chain from its head onto the heads of the new chains."""
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


def frames():
    f = []
    A1, A2, A3, A4 = "192.168.1.10", "192.168.1.11", "192.168.7.7", "192.168.9.9"
    R = "198.51.100.5"
    f.append(eth_ip(ipv4(A1, R, 6, tcp(A1, R, 40000, 80, b"GET /"))))
    f.append(eth_ip(ipv4(A1, R, 17, udp(A1, R, 5353, 53, b"query"))))
    f.append(eth_ip(ipv4(A2, R, 17, udp(A2, R, 5000, 53, b"nocsum", csum=0))))
    f.append(eth_ip(ipv4(A2, R, 1, icmp(8, 0, b"\0\7\0\1", b"ping"))))
    f.append(eth_ip(ipv4(R, "10.0.0.1", 6, tcp(R, "10.0.0.1", 80, 40000, b"200 OK"))))
    f.append(eth_ip(ipv4(R, "10.0.0.2", 17, udp(R, "10.0.0.2", 53, 5000, b"answer"))))
    f.append(eth_ip(ipv4(A3, R, 47, bytes(12))))                                  # GRE
    f.append(eth_ip(ipv4(A3, R, 6, b"later-fragment" * 2, flags_off=0x0005)))    # no L4 update
    f.append(eth_ip(ipv4(A1, R, 6, tcp(A1, R, 1, 2)[:12])))                      # short TCP
    f.append(eth_ip(ipv4(A1, R, 6, tcp(A1, R, 40001, 443, b"bad", csum=0xBEEF))))
    f.append(eth_ip(ipv4(A4, R, 17, udp(A4, R, 1, 2, b"no address left"))))      # range used up
    f.append(eth_ip(ipv4(R, "10.0.0.3", 1, icmp(0, 0, b"\0\7\0\1", b"pong"))))
    f.append(eth_ip(ipv4(R, "10.0.0.9", 17, udp(R, "10.0.0.9", 1, 2, b"unmapped"))))
    f.append(eth_ip(ipv4("203.0.113.1", "192.168.1.10", 6, tcp("203.0.113.1", "192.168.1.10", 7, 8))))
    f.append(eth_ip(ipv4(A2, "10.0.0.1", 17, udp(A2, "10.0.0.1", 9, 9, b"hairpin"))))
    f.append(eth_ip(ipv4(A1, R, 6, tcp(A1, R, 40000, 80, b"more"), opts=b"\x01\x01\x01\x01")))
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"out": [], "in": [], "pass": []}
    pool = [bytes([10, 0, 0, n]) for n in (1, 2, 3)]
    nxt = 0
    flows = []          # [orig, new, input]
    entries = []        # (key, flow index, direction), insertion order
    fails = 0
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        q = p.copy()
        ip = 14
        q.data = q.data[:ip + be16(q.data, ip + 2)]    # CheckIPHeader drops link padding
        d = q.data
        hl = (d[ip] & 15) * 4
        src, dst = bytes(d[ip + 12:ip + 16]), bytes(d[ip + 16:ip + 20])
        inside = src[:2] == bytes([192, 168])
        hit = None
        for i, (o, n, _) in enumerate(flows):
            if o == src:
                hit = (i, 0)
        if hit is None:
            for i, (o, n, _) in enumerate(flows):
                if n == dst:
                    hit = (i, 1)
        if hit is None:
            if not inside:
                outs["pass"].append(q)
                continue
            # sequential allocation: the first address whose reply key is free
            val = None
            for k in range(3):
                c = (nxt + k) % 3
                if all(n != pool[c] for _, n, _ in flows):
                    val = c
                    break
            if val is None:
                fails += 1
                continue
            nxt = val + 1
            flows.append([src, pool[val], 0])
            i = len(flows) - 1
            entries.append(((src, Z), i, 0))
            entries.append(((Z, pool[val]), i, 1))
            hit = (i, 0)
        i, reply = hit
        o, n, _ = flows[i]
        ipd = upd_words(0, words(o) + words(Z), words(n) + words(Z))
        if reply:
            d[ip + 16:ip + 20] = o
        else:
            d[ip + 12:ip + 16] = n
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
    order = table_order(entries)
    ip_s = lambda a: ".".join(str(x) for x in a)
    lines = ["%d" % len(flows), "%d" % len(flows), "%d" % fails,
             "10.0.0.1-10.0.0.3 - [%d]" % len(flows), "pass 2 placeholder"]
    lines[4] = "<nochange>"
    table = []
    for j in order:
        (k, i, dirn) = entries[j]
        o, n, inp = flows[i]
        # the forward entry prints (saddr => rewritten saddr); the reply entry's key and
        # its partner's key have no address in those positions
        left = o if dirn == 0 else Z
        right = n if dirn == 0 else Z
        ports = "[*0 1]" if dirn == 0 else "[0 *1]"
        table.append("%s => %s %s i%d exp600" % (ip_s(left), ip_s(right), ports, inp))
    write_text(os.path.join(HERE, "expected.txt"), lines + table)


main()
