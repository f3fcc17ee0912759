#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from rwlib import Pattern, Rewriter, Spec, aton  # noqa: E402

R = "198.51.100.5"


def frames():
    f = []
    # Inside 192.168.1.0/24 through to_a: TCP to tr, UDP to ur, alternating,
    # 12 flows over 10 ports (the shared counter wraps).
    for k in range(12):
        c = "192.168.1.%d" % (10 + k)
        if k % 2 == 0:
            f.append(eth_ip(ipv4(c, R, 6, tcp(c, R, 1000 + k, 80, b"syn"))))
        else:
            f.append(eth_ip(ipv4(c, R, 17, udp(c, R, 1000 + k, 53, b"q"))))
    f.append(eth_ip(ipv4("192.168.1.10", R, 6, tcp("192.168.1.10", R, 1000, 80, b"again"))))
    f.append(eth_ip(ipv4("192.168.1.10", R, 1, icmp(8, 0, b"\0\1\0\1", b"ping"))))   # tr: dropped
    # keep (tr input 2) and its replies.
    f.append(eth_ip(ipv4("192.168.2.5", R, 6, tcp("192.168.2.5", R, 3333, 443, b"keep"))))
    f.append(eth_ip(ipv4(R, "192.168.2.5", 6, tcp(R, "192.168.2.5", 443, 3333, b"kept"))))
    # to_b (ur input 2): own port kept; UDP and TCP in UDPRewriter's one table.
    f.append(eth_ip(ipv4("192.168.2.6", R, 17, udp("192.168.2.6", R, 3456, 53, b"own port"))))
    f.append(eth_ip(ipv4("192.168.4.1", R, 6, tcp("192.168.4.1", R, 3999, 80, b"tcp in ur"))))
    f.append(eth_ip(ipv4("192.168.4.1", R, 17, udp("192.168.4.1", R, 3999, 80, b"same ports, udp"))))
    # pass (tr input 3): TCP, UDP and ICMP unchanged on output 4.
    f.append(eth_ip(ipv4("192.168.3.1", R, 6, tcp("192.168.3.1", R, 5, 6, b"pass"))))
    f.append(eth_ip(ipv4("192.168.3.1", R, 17, udp("192.168.3.1", R, 5, 6, b"pass"))))
    f.append(eth_ip(ipv4("192.168.3.1", R, 1, icmp(8, 0, b"\0\2\0\2", b"pass"))))
    # Replies.
    for k in range(12):
        p = 6 if k % 2 == 0 else 17
        dp = 1000 + k
        f.append(("reply", p, k, dp))
    f.append(eth_ip(ipv4(R, "10.0.0.2", 17, udp(R, "10.0.0.2", 53, 3456, b"answer"))))
    f.append(eth_ip(ipv4(R, "10.0.0.2", 6, tcp(R, "10.0.0.2", 80, 3999, b"tcp answer"))))
    f.append(eth_ip(ipv4(R, "10.0.0.1", 6, tcp(R, "10.0.0.1", 80, 2099, b"stray"))))
    f.append(eth_ip(ipv4(R, "10.0.0.1", 17, udp(R, "10.0.0.1", 99, 2001, b"stray"))))
    return f


def main():
    pat_a = Pattern("10.0.0.1 2000-2009# - -")
    pat_b = Pattern("10.0.0.2 3000-3999 - -")
    tr = Rewriter("tcp", [Spec("pattern", 0, 1, pat_a), Spec("drop"), Spec("keep", 2, 3), Spec("pass", 4)])
    ur = Rewriter("udp", [Spec("pattern", 0, 1, pat_a), Spec("drop"), Spec("pattern", 2, 3, pat_b)])
    # Public ports of the 12 to_a flows: run the model on the forward packets.
    fr = frames()
    ports = {}
    tmp_a = Pattern("10.0.0.1 2000-2009# - -")
    maps = {6: {}, 17: {}}
    for k in range(12):
        p = 6 if k % 2 == 0 else 17
        c = aton("192.168.1.%d" % (10 + k))
        fl = (c, 1000 + k, aton(R), 80 if p == 6 else 53)
        rf = tmp_a.rewrite(fl, maps[p])
        maps[p][(rf[2], rf[3], rf[0], rf[1])] = 1
        ports[k] = rf[1]
    frs = []
    for x in fr:
        if isinstance(x, tuple):
            _, p, k, dp = x
            pp = ports[k]
            seg = tcp(R, "10.0.0.1", 80, pp, b"reply") if p == 6 else udp(R, "10.0.0.1", 53, pp, b"reply")
            x = eth_ip(ipv4(R, "10.0.0.1", p, seg))
        frs.append(x)
    pkts = write_input(os.path.join(HERE, "input.pcap"), frs)
    outs = {"tr%d" % i: [] for i in range(5)}
    outs.update({"ur%d" % i: [] for i in range(4)})
    for p in pkts:
        q = p.copy()
        q.data = q.data[:14 + ((q.data[16] << 8) | q.data[17])]
        d = q.data
        src, dst, proto = d[26:30], d[30:34], d[23]
        if src[:3] == bytes([192, 168, 1]):
            el, port = (tr, 0) if proto == 6 else (ur, 0)
        elif src[:3] == bytes([192, 168, 2]):
            el, port = (tr, 2) if proto == 6 else (ur, 2)
        elif src[:3] == bytes([192, 168, 3]):
            el, port = tr, 3
        elif src[:3] == bytes([192, 168, 4]):
            el, port = ur, 2
        elif dst == aton("10.0.0.1"):
            el, port = (tr, 1) if proto == 6 else (ur, 1)
        elif dst == aton("10.0.0.2"):
            el, port = ur, 1
        elif dst[:3] == bytes([192, 168, 2]):
            el, port = tr, 1
        else:
            continue
        o = el.process(port, q)
        if o is not None:
            outs[("tr" if el is tr else "ur") + str(o)].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"),
               [tr.nflows, ur.nflows, sum(s.failures for s in tr.specs),
                sum(s.failures for s in ur.specs)])


main()
