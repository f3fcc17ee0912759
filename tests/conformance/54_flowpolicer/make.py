#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

FlowPolicer (pronto's own element): one token bucket per flow, full when the
flow is first seen, refilled at RATE (1 packet or 1 byte per second here, so
nothing is earned during the run). KEY src/dst/flow pick the flow fields;
bytes mode charges the IP total length. Click has no such element; the
packet-mode split by source was cross-checked against click_equiv.click
(IPClassifier by source feeding RatedSplitter(1, BURST_SIZE 3) per source),
whose outputs equal expected_p1_*.pcap."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

SRCS = ["10.0.4.1", "10.0.4.2", "10.0.4.3"]


def frames():
    f = []
    for i in range(36):
        s = SRCS[(i * 7 // 3) % 3]
        d = "192.168.5.%d" % (1 + i % 4)
        sport = 8000 + (i // 2) % 2
        if i % 9 == 4:
            f.append(eth_ip(ipv4(s, d, 6, tcp(s, d, sport, 80, b"t" * (i * 5 % 70)))))
        else:
            f.append(eth_ip(ipv4(s, d, 17, udp(s, d, sport, 53, b"f" * (i * 13 % 110)))))
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))   # not IP: conforms unpoliced
    return f


def key(p, kind):
    ip = bytes(p.data[14:])
    if len(ip) < 20 or ip[0] >> 4 != 4 or p.data[12:14] != b"\x08\x00":
        return None
    if kind == "src":
        return ip[12:16]
    if kind == "dst":
        return ip[16:20]
    hl = (ip[0] & 15) * 4
    return bytes([ip[9]]) + ip[12:20] + ip[hl:hl + 4]


def police(pkts, kind, burst, by_bytes):
    tokens = {}
    ok, bad, nonip = [], [], 0
    for p in pkts:
        k = key(p, kind)
        if k is None:
            ok.append(p)
            nonip += 1
            continue
        need = struct.unpack("!H", bytes(p.data[16:18]))[0] if by_bytes else 1
        t = tokens.setdefault(k, burst)
        if t >= need:
            tokens[k] = t - need
            ok.append(p)
        else:
            assert need - t >= 1   # at least a second's refill away
            bad.append(p)
    return ok, bad, len(tokens), nonip


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    ok1, bad1, n1, _ = police(pkts, "src", 3, False)
    ok2, bad2, n2, _ = police(pkts, "flow", 200, True)
    ok3, bad3, n3, nonip3 = police(pkts, "dst", 2, False)
    for name, v in [("p1_0", ok1), ("p1_1", bad1), ("p2_0", ok2), ("p3_0", ok3), ("p3_1", bad3)]:
        write_todump(os.path.join(HERE, "expected_%s.pcap" % name), v)
    write_text(os.path.join(HERE, "expected.txt"),
               [len(ok1) - 1, len(bad1), n1, len(ok2) - 1, len(bad2), n2, n3, nonip3,
                "1", "0.008kbps"])


main()
