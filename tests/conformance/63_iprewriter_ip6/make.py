#!/usr/bin/python3
"""Generates input.pcap and the expected outputs of this case with scapy
(independent of pronto). Run with /usr/bin/python3 (scapy installed there).

The rewriter is modelled from pronto's IPRewriter documentation (IPv6 goes
past Click): a new flow on a pattern input gets the pattern's addresses and
ports (a `#` range: the next port in turn, one counter for TCP and UDP);
its replies are mapped back whatever input they arrive on; the TCP and UDP
checksums of every rewritten packet are what scapy computes from scratch
over the IPv6 pseudo-header (a zero UDP checksum stays zero); packets with
no mapping on the `pass 2` input leave unchanged on output 2, on the
pattern inputs they are dropped (an IPv4 packet there counts as a mapping
failure; ICMPv6 and later fragments do not).
"""
import ipaddress, os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import Pkt, write_input, write_todump, write_text  # noqa: E402
from scapy.all import (Ether, IP, IPv6, TCP, UDP, Raw, ICMPv6EchoRequest,  # noqa: E402
                       IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, raw)

A, B, C, D = "2001:db8:1::a", "2001:db8:1::b", "2001:db8:1::c", "2001:db8:1::d"
X = "2001:db8:3::9"            # a server outside
NAT = "2001:db8:ffff::1"       # the source NAPT address
VIP, BACK = "2001:db8::80", "2001:db8:2::5"
E = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def frames():
    return [
        E / IPv6(src=A, dst=X) / TCP(sport=40000, dport=443, seq=100, flags="S"),
        E / IPv6(src=A, dst=X) / UDP(sport=5353, dport=53) / Raw(b"query-a"),
        E / IPv6(src=B, dst=X, hlim=7) / UDP(sport=1024, dport=53) / Raw(b"query-b"),
        E / IPv6(src=X, dst=NAT) / TCP(sport=443, dport=1024, seq=900, ack=101, flags="SA"),
        E / IPv6(src=X, dst=NAT) / UDP(sport=53, dport=1025) / Raw(b"answer-a"),
        E / IPv6(src=X, dst=NAT) / UDP(sport=53, dport=1026) / Raw(b"answer-b"),
        E / IPv6(src=C, dst=VIP, fl=0x12345) / TCP(sport=50000, dport=80, seq=7, flags="S"),
        E / IPv6(src=C, dst=VIP) / UDP(sport=50001, dport=80) / Raw(b"hello"),
        E / IPv6(src=BACK, dst=C) / TCP(sport=8080, dport=50000, seq=70, ack=8, flags="SA"),
        E / IPv6(src=BACK, dst=C) / UDP(sport=8080, dport=50001) / Raw(b"hello back"),
        E / IPv6(src=A, dst=X) / TCP(sport=40000, dport=443, seq=101, ack=901, flags="PA") / Raw(b"GET / HTTP/1.1\r\n\r\n"),
        E / IPv6(src=D, dst=X) / UDP(sport=7, dport=53, chksum=0) / Raw(b"no checksum"),
        E / IPv6(src=X, dst=NAT) / TCP(sport=443, dport=2000, flags="A") / Raw(b"stray"),
        E / IPv6(src=A, dst=X) / ICMPv6EchoRequest(id=1, seq=1, data=b"ping"),
        E / IP(src="192.0.2.1", dst="198.51.100.1", id=5) / UDP(sport=1000, dport=53) / Raw(b"v4"),
        E / IPv6(src=A, dst=X) / IPv6ExtHdrDestOpt() / TCP(sport=40001, dport=80, seq=5, flags="S"),
        E / IPv6(src=A, dst=X) / IPv6ExtHdrFragment(offset=2, m=0, id=9, nh=17) / Raw(b"later fragment"),
        E / IPv6(src=X, dst=NAT) / IPv6ExtHdrDestOpt() / TCP(sport=80, dport=1028, seq=50, ack=6, flags="SA"),
    ]


def rebuilt(frame, src=None, dst=None, sport=None, dport=None):
    """The frame with the fields given replaced and the TCP/UDP checksum
    computed again by scapy (a zero UDP checksum kept)."""
    p = Ether(raw(frame))
    ip = p[IPv6]
    if src:
        ip.src = src
    if dst:
        ip.dst = dst
    l4 = p[TCP] if TCP in p else p[UDP]
    if sport:
        l4.sport = sport
    if dport:
        l4.dport = dport
    if not (UDP in p and frame[UDP].chksum == 0):
        del l4.chksum
    return raw(p)


def s(a):
    return ipaddress.IPv6Address(a).compressed


def fid(a, ap, b, bp):
    return "(%s, %d, %s, %d)" % (s(a), ap, s(b), bp)


def main():
    fr = frames()
    pkts = write_input(os.path.join(HERE, "input.pcap"), [raw(f) for f in fr])
    out = {"fwd": [], "rev": [], "pass": []}

    def emit(k, i, data):
        q = pkts[i].copy()
        q.data = bytearray(data)
        out[k].append(q)

    # (index, output, rewritten frame), as the mappings say.
    emit("fwd", 0, rebuilt(fr[0], src=NAT, sport=1024))
    emit("fwd", 1, rebuilt(fr[1], src=NAT, sport=1025))
    emit("fwd", 2, rebuilt(fr[2], src=NAT, sport=1026))
    emit("rev", 3, rebuilt(fr[3], dst=A, dport=40000))
    emit("rev", 4, rebuilt(fr[4], dst=A, dport=5353))
    emit("rev", 5, rebuilt(fr[5], dst=B, dport=1024))
    emit("fwd", 6, rebuilt(fr[6], dst=BACK, dport=8080))
    emit("fwd", 7, rebuilt(fr[7], dst=BACK, dport=8080))
    emit("rev", 8, rebuilt(fr[8], src=VIP, sport=80))
    emit("rev", 9, rebuilt(fr[9], src=VIP, sport=80))
    emit("fwd", 10, rebuilt(fr[10], src=NAT, sport=1024))
    emit("fwd", 11, rebuilt(fr[11], src=NAT, sport=1027))
    emit("pass", 12, raw(fr[12]))
    # 13 ICMPv6 on the NAPT input: no mapping, dropped; 14 IPv4 on the
    # IPv6 pattern: a mapping failure, dropped.
    emit("fwd", 15, rebuilt(fr[15], src=NAT, sport=1028))
    # 16 a later fragment: no ports, no mapping, dropped.
    emit("rev", 17, rebuilt(fr[17], dst=A, dport=40001))
    for k, v in out.items():
        v.sort(key=lambda p: (p.sec, p.nsec))
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)

    # Tables: flows in creation order, each with its forward and reply
    # entry; no flow has seen data both ways, so every timeout is 300 s
    # (TCP without data both ways, UDP), and the run lasts milliseconds.
    def flow(a, ap, b, bp, ra, rap, rb, rbp, inp):
        return ["%s => %s [*0 1] i%d exp300" % (fid(a, ap, b, bp), fid(ra, rap, rb, rbp), inp),
                "%s => %s [0 *1] i%d exp300" % (fid(rb, rbp, ra, rap), fid(b, bp, a, ap), inp)]
    tcp = (flow(A, 40000, X, 443, NAT, 1024, X, 443, 0)
           + flow(C, 50000, VIP, 80, C, 50000, BACK, 8080, 1)
           + flow(A, 40001, X, 80, NAT, 1028, X, 80, 0))
    udp = (flow(A, 5353, X, 53, NAT, 1025, X, 53, 0)
           + flow(B, 1024, X, 53, NAT, 1026, X, 53, 0)
           + flow(C, 50001, VIP, 80, C, 50001, BACK, 8080, 1)
           + flow(D, 7, X, 53, NAT, 1027, X, 53, 0))
    write_text(os.path.join(HERE, "expected.txt"),
               [7, 1, "%s 1024-65535 - - [5]" % s(NAT), "- - %s 8080 [2]" % s(BACK), "<nochange>"]
               + tcp + udp + ["%s 1024 %s 443" % (s(NAT), s(X))])


main()
