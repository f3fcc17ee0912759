#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from rwlib import Pattern, RoundRobin, Rewriter, Spec  # noqa: E402

R, DN = "198.51.100.5", "172.16.0.5"
A, B, C = "192.168.1.10", "192.168.1.11", "192.168.2.7"


def frames():
    f = []
    # (proto, client, sport, dport) for new inside flows; the mapper takes the
    # patterns in turn: 1 -> 10.0.0.1, 2 -> 10.0.0.2 (5000-5002), 3 -> DNAT.
    flows = [(6, A, 40000, 80), (6, A, 40001, 80), (17, B, 5353, 53),
             (17, B, 5354, 53), (6, C, 1111, 80), (6, C, 1112, 443),
             (6, A, 40002, 80), (6, A, 40003, 80), (6, B, 2000, 22),
             (6, C, 1113, 443), (6, C, 1114, 80), (17, C, 1115, 53),
             (6, B, 2001, 22), (17, B, 2002, 123), (6, A, 40004, 80),
             (6, A, 40005, 443), (6, B, 2003, 80)]
    for p, c, sp, dp in flows:
        seg = tcp(c, R, sp, dp, b"hello") if p == 6 else udp(c, R, sp, dp, b"query")
        f.append(eth_ip(ipv4(c, R, p, seg)))
    # A second packet of the first flow, ICMP (dropped: not TCP/UDP), a fragment.
    f.append(eth_ip(ipv4(A, R, 6, tcp(A, R, 40000, 80, b"again", seq=1005))))
    f.append(eth_ip(ipv4(A, R, 1, icmp(8, 0, b"\0\1\0\1", b"ping"))))
    f.append(eth_ip(ipv4(A, R, 6, b"later-fragment", flags_off=0x0003)))
    # Replies, to each kind of mapping, and strays.
    f.append(eth_ip(ipv4(R, "10.0.0.1", 6, tcp(R, "10.0.0.1", 80, 1024, b"200 OK"))))
    f.append(eth_ip(ipv4(R, "10.0.0.2", 6, tcp(R, "10.0.0.2", 80, 5000, b"200 OK"))))
    f.append(eth_ip(ipv4(DN, B, 17, udp(DN, B, 8080, 5353, b"answer"))))
    f.append(eth_ip(ipv4(DN, C, 6, tcp(DN, C, 8080, 1112, b"hi"))))
    f.append(eth_ip(ipv4(R, "10.0.0.1", 17, udp(R, "10.0.0.1", 53, 1025, b"answer"))))
    f.append(eth_ip(ipv4(R, "10.0.0.2", 17, udp(R, "10.0.0.2", 53, 5001, b"wrong proto"))))
    f.append(eth_ip(ipv4(R, "10.0.0.1", 6, tcp(R, "10.0.0.1", 80, 4000, b"unknown"))))
    f.append(eth_ip(ipv4(R, "10.0.0.2", 6, tcp(R, "10.0.0.2", 22, 5002, b"ssh"))))
    return f


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    rr = RoundRobin([Spec("pattern", 0, 1, Pattern("10.0.0.1 1024-65535# - -")),
                     Spec("pattern", 0, 1, Pattern("10.0.0.2 5000-5002# - -")),
                     Spec("pattern", 2, 3, Pattern("- - 172.16.0.5 8080"))])
    rw = Rewriter("ip", [Spec("mapper", mapper=rr), Spec("drop")])
    names = ["snat", "snat_reply", "dnat", "dnat_reply"]
    outs = {k: [] for k in names}
    for p in pkts:
        q = p.copy()
        d = q.data
        q.data = d[:14 + be16(d, 16)]      # CheckIPHeader drops link padding
        inside = q.data[26:28] == bytes([192, 168])
        o = rw.process(0 if inside else 1, q)
        if o is not None:
            outs[names[o]].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    fails = sum(s.failures for s in rw.specs)
    write_text(os.path.join(HERE, "expected.txt"), [rw.nflows, fails, rw.nflows])


main()
