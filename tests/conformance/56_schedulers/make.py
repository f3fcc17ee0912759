#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

Each scheduler's Unqueue is inactive until the trace has ended, so the
queues hold everything they accepted (tail drop when full) before the first
pull; then the schedulers are modelled pull by pull:
- PrioSched: the lowest-numbered non-empty input;
- RoundRobinSched: inputs in turn, the next pull starting after the input
  that gave the last packet;
- DRRSched: Click's deficit round robin (a head packet held back until its
  input's deficit covers it, QUANTUM added to an input when the scan moves
  to it, an input found empty loses its deficit; a pull that scans every
  input once without sending returns nothing, and the Unqueue pulls again).
"""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
DST = "192.168.7.9"


def frames():
    f = []
    for i in range(44):
        s = HOSTS[(i * 7 // 3) % 3]
        kind = (i * 5 + i // 4) % 4
        if i in (9, 30):
            # ARP request (byte 23 = sender MAC byte 1 = 0x00: class "-")
            arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac(HOST_A) + \
                ip_aton(s) + b"\0" * 6 + ip_aton(DST)
            f.append(ether("ff:ff:ff:ff:ff:ff", HOST_A, 0x0806, arp))
        elif kind in (0, 3):
            body = bytes((i + k) & 0xFF for k in range((i * 97) % 640))
            f.append(eth_ip(ipv4(s, DST, 17, udp(s, DST, 5000 + i, 53, body), ident=i)))
        elif kind == 1:
            body = b"t" * ((i * 131) % 900)
            f.append(eth_ip(ipv4(s, DST, 6, tcp(s, DST, 40000 + i, 80, body, seq=i * 1000),
                                 ident=i)))
        else:
            f.append(eth_ip(ipv4(s, DST, 1, icmp(8, 0, struct.pack("!HH", 77, i), b"p" * 56),
                                 ident=i)))
    return f


def proto(p):
    d = p.data
    if len(d) < 34 or d[12:14] != b"\x08\x00":
        return None
    return d[23]


def src(p):
    d = p.data
    if len(d) < 34 or d[12:14] != b"\x08\x00":
        return None
    return "%d.%d.%d.%d" % tuple(d[26:30])


def fill(pkts, classify, caps):
    qs = [[] for _ in caps]
    drops = [0] * len(caps)
    for p in pkts:
        c = classify(p)
        if len(qs[c]) < caps[c]:
            qs[c].append(p)
        else:
            drops[c] += 1
    return qs, drops


def prio(qs):
    qs = [list(q) for q in qs]
    out = []
    while any(qs):
        out.append(next(q for q in qs if q).pop(0))
    return out


def rr(qs):
    qs = [list(q) for q in qs]
    out, nxt = [], 0
    while any(qs):
        i = nxt
        for _ in range(len(qs)):
            got = qs[i].pop(0) if qs[i] else None
            i = (i + 1) % len(qs)
            if got:
                nxt = i
                out.append(got)
                break
    return out


def drr(qs, quantum):
    qs = [list(q) for q in qs]
    n = len(qs)
    head, deficit = [None] * n, [0] * n
    nxt = 0
    out, empty_pulls = [], 0

    def pull():
        nonlocal nxt
        for _ in range(n):
            p = head[nxt]
            if p is not None:
                head[nxt] = None
            elif qs[nxt]:
                p = qs[nxt].pop(0)
            if p is None:
                deficit[nxt] = 0
            elif len(p.data) <= deficit[nxt]:
                deficit[nxt] -= len(p.data)
                return p
            else:
                head[nxt] = p
            nxt = (nxt + 1) % n
            deficit[nxt] += quantum
        return None

    while any(qs) or any(h is not None for h in head):
        p = pull()
        if p is None:
            empty_pulls += 1
        else:
            out.append(p)
    assert empty_pulls > 0
    return out


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    pq, pdrops = fill(pkts, lambda p: {17: 0, 6: 1}.get(
        p.data[23] if len(p.data) > 23 else None, 2), [6, 5, 20])
    # PrioSched inputs: pq1, pq0, pq2
    out_prio = prio([pq[1], pq[0], pq[2]])
    rq, rdrops = fill(pkts, lambda p: {HOSTS[0]: 0, HOSTS[1]: 1}.get(src(p), 2), [20, 4, 20])
    out_rr = rr(rq)
    dq, ddrops = fill(pkts, lambda p: {17: 0, 6: 1}.get(proto(p), 2), [20, 20, 3])
    out_drr = drr(dq, 200)
    assert sum(pdrops) and sum(rdrops) and sum(ddrops)
    write_todump(os.path.join(HERE, "expected_prio.pcap"), out_prio)
    write_todump(os.path.join(HERE, "expected_rr.pcap"), out_rr)
    write_todump(os.path.join(HERE, "expected_drr.pcap"), out_drr)
    lines = [len(q) for q in pq + rq + dq] + pdrops + rdrops + ddrops
    lines += [len(out_prio), len(out_rr), len(out_drr), 0, 0, 0]
    write_text(os.path.join(HERE, "expected.txt"), lines)


main()
