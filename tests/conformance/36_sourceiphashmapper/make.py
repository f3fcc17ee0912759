#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).
The consistent-hash keys are glibc random() values after srandom(12345), as Click's
userlevel build draws them."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from rwlib import Pattern, Rewriter, SourceIPHash, Spec, aton  # noqa: E402

VIP = "192.0.2.10"
CLIENTS = ["203.0.113.%d" % i for i in (1, 2, 3, 4, 5, 9, 17, 33, 65, 129, 200, 254)] + \
          ["198.51.100.%d" % i for i in (1, 7, 77)] + ["10.9.8.7", "172.20.0.1", "1.2.3.4"]


def frames(server_of):
    f = []
    for k, c in enumerate(CLIENTS):
        f.append(eth_ip(ipv4(c, VIP, 6, tcp(c, VIP, 30000 + k, 80, b"GET /"))))
    for k, c in enumerate(CLIENTS[:6]):      # a second connection: same server
        f.append(eth_ip(ipv4(c, VIP, 17, udp(c, VIP, 40000 + k, 80, b"quic?"))))
    f.append(eth_ip(ipv4(CLIENTS[0], VIP, 1, icmp(8, 0, b"\0\1\0\1", b"ping"))))
    if server_of:
        for k, c in enumerate(CLIENTS[:8]):  # server replies
            s, sp = server_of[c]
            f.append(eth_ip(ipv4(s, c, 6, tcp(s, c, sp, 30000 + k, b"200 OK"))))
    f.append(eth_ip(ipv4("10.1.0.1", "203.0.113.99", 6, tcp("10.1.0.1", "203.0.113.99", 80, 1, b"?"))))
    return f


def model():
    sh = SourceIPHash(8, 12345, [(Spec("pattern", 0, 1, Pattern("- - 10.1.0.1 80")), 5),
                                 (Spec("pattern", 0, 1, Pattern("- - 10.1.0.2 80")), 0),
                                 (Spec("pattern", 0, 1, Pattern("- - 10.1.0.3 8080")), 2)])
    return Rewriter("ip", [Spec("mapper", mapper=sh), Spec("drop")])


def main():
    # First pass: where each client goes, so that the servers' replies come from there.
    rw = model()
    server_of = {}
    for c in CLIENTS:
        res = rw.specs[0].mapper.rewrite((aton(c), 1, aton(VIP), 80), {})
        server_of[c] = (".".join(str(x) for x in res[1][2]), res[1][3])
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames(server_of))
    rw = model()
    outs = {"servers": [], "clients": []}
    for p in pkts:
        q = p.copy()
        q.data = q.data[:14 + ((q.data[16] << 8) | q.data[17])]
        o = rw.process(0 if q.data[30:34] == aton(VIP) else 1, q)
        if o is not None:
            outs["servers" if o == 0 else "clients"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"),
               [rw.nflows, sum(s.failures for s in rw.specs)])


main()
