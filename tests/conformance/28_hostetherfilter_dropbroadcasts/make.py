#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

OWN = mac("02:00:00:00:00:02")
HOST, BROADCAST, MULTICAST, OTHERHOST = 0, 1, 2, 3


def frames():
    f = []
    dsts = ["02:00:00:00:00:02", "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "33:33:00:00:00:01",
            "02:00:00:00:00:03", "00:00:00:00:00:00", "ff:ff:ff:ff:ff:fe", "03:00:00:00:00:02",
            "01:80:c2:00:00:0e", "02:00:00:00:00:02"]
    srcs = ["02:00:00:00:00:01", "02:00:00:00:00:02", "00:11:22:33:44:55"]
    for i in range(30):
        d = dsts[i % len(dsts)]
        s = srcs[(i // len(dsts)) % len(srcs)]
        et = [0x0800, 0x0806, 0x86DD, 0x88CC][i % 4]
        f.append(ether(d, s, et, bytes([i]) * (20 + i)))
    return f


def host_ether_filter(p, drop_own, drop_other):
    d = p.data
    if drop_own and d[6:12] == OWN:
        return 1
    if d[0:6] == OWN:
        p.ptype = HOST
    elif d[0:6] == b"\xff" * 6:
        p.ptype = BROADCAST
    elif d[0] & 1:
        p.ptype = MULTICAST
    else:
        p.ptype = OTHERHOST
        if drop_other:
            return 1
    return 0


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("host", "own_or_other", "bcast_mcast", "keep_other", "no_anno")}
    drops = [0, 0, 0]
    for p in pkts:
        q = p.copy()
        if host_ether_filter(q, True, True):
            outs["own_or_other"].append(q)
        elif q.ptype in (BROADCAST, MULTICAST):
            drops[0] += 1
            outs["bcast_mcast"].append(q)
        else:
            outs["host"].append(q)
        q = p.copy()
        host_ether_filter(q, False, False)
        if q.ptype in (BROADCAST, MULTICAST):
            drops[1] += 1
        else:
            outs["keep_other"].append(q)
        outs["no_anno"].append(p.copy())
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), drops)


main()
