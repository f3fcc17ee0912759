#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def key_hash(k):
    rot = lambda v, r: ((v << r) | (v >> (32 - r))) & 0xFFFFFFFF
    s, sp, d, dp = k
    sx = struct.unpack("<I", s)[0]
    dx = struct.unpack("<I", d)[0]
    return rot(sx, sp % 16 + 1) ^ rot(dx, 31 - dp % 16) ^ ((dp << 16) | sp)


def table_order(keys):
    """Chained buckets, newest first; 1 bucket growing to 3, 7, ... past two entries
    per bucket (checked after each stored flow), chains relinked head first."""
    buckets = [[]]
    for j in range(len(keys)):
        buckets[key_hash(keys[j]) % len(buckets)].insert(0, j)
        if j % 2 == 1 and j + 1 > 2 * len(buckets):
            n = 1
            while n < len(buckets) + 1:
                n = ((n + 1) << 1) - 1
            nb = [[] for _ in range(n)]
            for chain in buckets:
                for e in chain:
                    nb[key_hash(keys[e]) % n].insert(0, e)
            buckets = nb
    return [e for chain in buckets for e in chain]


def echo(src, dst, typ, ident, seq, payload=b"abcdefgh", **kw):
    return eth_ip(ipv4(src, dst, 1, icmp(typ, 0, struct.pack("!HH", ident, seq), payload), **kw))


def frames():
    A, B, R, S = "192.168.1.10", "192.168.1.11", "198.51.100.5", "203.0.113.7"
    return [
        echo(A, R, 8, 0x0100, 1),
        echo(A, R, 8, 0x0100, 2),
        echo(B, R, 8, 0x0100, 1),
        echo(A, S, 8, 0x00FF, 1, payload=b""),
        echo(R, "10.0.0.1", 0, 1024, 1),
        echo(R, "10.0.0.1", 0, 1025, 1),
        echo(R, "10.0.0.1", 0, 1026, 1),           # reply to a flow from another host: no
        echo(S, "10.0.0.1", 0, 1026, 1),
        echo(R, "10.0.0.1", 0, 4444, 1),           # unexpected reply: dropped
        echo(R, "10.0.0.1", 8, 1024, 1),           # request from outside: input 1 drops
        eth_ip(ipv4(A, R, 1, icmp(13, 0, b"\0\1\0\1", bytes(12)))),   # timestamp: dropped
        eth_ip(ipv4(A, R, 17, udp(A, R, 1, 2, b"udp"))),               # not ICMP: dropped
        echo(A, R, 8, 0x0100, 3, flags_off=0x2000),                    # first fragment
        eth_ip(ipv4(A, R, 1, b"tail-of-a-ping", flags_off=0x0003)),   # later fragment: dropped
        echo(A, R, 8, 0xFFFF, 9, payload=bytes(7)),
    ]


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"out": [], "in": []}
    pat_addr = bytes([10, 0, 0, 1])
    nxt = 0
    flows = []      # (fwd key, reply key)
    keys = []
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
        inside = src[:2] == bytes([192, 168])
        if d[ip + 9] != 1 or be16(d, ip + 6) & 0x1FFF or len(d) - th < 6 or d[th] not in (0, 8):
            continue
        is_echo = d[th] == 8
        ident = be16(d, th + 4)
        k = (src, ident, dst, plus1(ident)) if is_echo else (src, plus1(ident), dst, ident)
        hit = None
        for i, (fk, rk) in enumerate(flows):
            if fk == k:
                hit = (i, 0)
            elif rk == k:
                hit = (i, 1)
        if hit is None:
            if not is_echo or not inside:
                continue
            # sequential from 1024; a candidate is taken if the reverse lookup key
            # (dst, id+1, new src, candidate) is a reply entry already
            val = nxt
            while (dst, plus1(ident), pat_addr, 1024 + val) in [rk for _, rk in flows]:
                val += 1
            nxt = val + 1
            nid = 1024 + val
            rk = (dst, plus1(nid), pat_addr, nid)
            flows.append((k, rk))
            keys += [k, rk]
            hit = (len(flows) - 1, 0)
        i, reply = hit
        fk, rk = flows[i]
        # forward: (src, id) -> (new src, new id); reply undoes it
        orig_src, orig_id, orig_dst = fk[0], fk[1], fk[2]
        new_src, new_id = rk[2], rk[3]
        ipd = 0
        for o, n in zip(words(orig_src) + words(orig_dst), words(new_src) + words(orig_dst)):
            ipd = upd(ipd, o, n)
        l4d = upd(0, orig_id, new_id)
        if reply:
            d[ip + 16:ip + 20] = orig_src
            d[th + 4:th + 6] = struct.pack("!H", orig_id)
        else:
            d[ip + 12:ip + 16] = new_src
            d[th + 4:th + 6] = struct.pack("!H", new_id)
        apply_delta(d, ip + 10, ipd, reply)
        apply_delta(d, th + 2, l4d, reply)
        if be16(d, th + 2) == 0 and not any(d[th:]):
            d[th + 2:th + 4] = b"\xff\xff"
        outs["in" if reply else "out"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    ip_s = lambda a: ".".join(str(x) for x in a)
    lines = ["%d" % len(flows), "10.0.0.1 1024-65535 - - [%d]" % len(flows), "<drop>"]
    for j in table_order(keys):
        i, dirn = j // 2, j % 2
        fk, rk = flows[i]
        k = keys[j]
        other = keys[j ^ 1]
        # an entry prints its key and the reverse of its partner's key
        r = (other[2], other[3], other[0], other[1])
        ports = "[*0 1]" if dirn == 0 else "[0 *1]"
        lines.append("(%s, %s, %d) => (%s, %s, %d) %s i0 exp300" % (
            ip_s(k[0]), ip_s(k[2]), k[1], ip_s(r[0]), ip_s(r[2]), r[1], ports))
    write_text(os.path.join(HERE, "expected.txt"), lines)


main()
