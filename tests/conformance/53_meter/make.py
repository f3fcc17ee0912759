#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

Meter and BandwidthMeter: the EWMA of the arrival rate (per 1 ms jiffy,
stability shift 4, 10 fractional bits) stays below thresholds that a
30-packet trace replayed at full speed cannot reach (at most 30 packets and
6000 bytes in one jiffy give 30*1024/16 and 6000*1024/16 scaled units,
below the thresholds' (RATE<<10)/1000), so every packet takes output 0; the
`meters` handlers print the thresholds back through the fixed-point
representation (concatenated without separators, as Click does)."""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

MAX = 0xFFFFFFFF


def frames():
    f = []
    for i in range(30):
        s = "10.0.3.%d" % (1 + i % 6)
        d = "192.168.4.2"
        f.append(eth_ip(ipv4(s, d, 17, udp(s, d, 7000 + i, 9, b"m" * (i * 11 % 120)))))
    return f


def unparse_real2(real, frac_bits):
    """cp_unparse_real2 for an unsigned fixed-point value."""
    one = 1 << frac_bits
    s = str(real >> frac_bits)
    r = real & (one - 1)
    if r == 0:
        return s
    s += "."
    r = 10 * r + 5
    allowable = 10
    rounder = 5
    while rounder < (one >> 1):
        rounder *= 10
    while True:
        if allowable > one:
            r += (one >> 1) - rounder
        s += chr(ord("0") + (r >> frac_bits))
        r = 10 * (r & (one - 1))
        allowable *= 10
        if r <= allowable:
            break
    return s


def meters(rates):
    return "".join(unparse_real2((((v << 10) // 1000) * 1000) & MAX, 10) for v in rates)


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    assert 30 * 1024 // 16 < (1000000 << 10) // 1000
    assert sum(len(p.data) for p in pkts) * 1024 // 16 < (3000000 << 10) // 1000
    write_todump(os.path.join(HERE, "expected_m_0.pcap"), pkts)
    write_todump(os.path.join(HERE, "expected_m_1.pcap"), [])
    write_todump(os.path.join(HERE, "expected_bm_0.pcap"), pkts)
    write_todump(os.path.join(HERE, "expected_bm_1.pcap"), [])
    write_todump(os.path.join(HERE, "expected_bm_2.pcap"), [])
    write_text(os.path.join(HERE, "expected.txt"),
               [meters([1000000]), meters([3000000, 4000000]), meters([500, 1000, 2000]),
                meters([125, 1500])])


main()
