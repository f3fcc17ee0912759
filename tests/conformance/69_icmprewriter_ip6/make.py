#!/usr/bin/python3
"""Generates input.pcap and the expected outputs of this case with scapy
(independent of pronto). Run with /usr/bin/python3 (scapy installed there).

Modelled from pronto's ICMPRewriter documentation (IPv6 goes past Click):
an ICMPv6 error whose quote is a packet of a mapped flow, as it left the
NAT, comes out as the same error about the packet as the inside host sent
it: the quote is the original packet (scapy computes its checksum from
scratch; a quote cut before the transport checksum is the original cut at
the same length), the outer destination is the inside host when the error
was sent to the NAT address (kept otherwise), and scapy computes the
ICMPv6 checksum from scratch over the new pseudo-header.
"""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import write_input, write_todump, write_text  # noqa: E402
from scapy.all import (Ether, IPv6, TCP, UDP, Raw, ICMPv6EchoRequest,  # noqa: E402
                       ICMPv6DestUnreach, ICMPv6PacketTooBig, ICMPv6TimeExceeded,
                       ICMPv6ParamProblem, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, raw)

A = "2001:db8:1::a"          # the inside host
X = "2001:db8:3::9"          # a server outside
R = "2001:db8:4::1"          # a router on the way
NAT = "2001:db8:ffff::1"     # the rewriters' address
OTHER = "2001:db8:ffff::5"   # another address behind the NAT
E = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def udp(src, sport, ext=False):
    p = IPv6(src=src, dst=X)
    if ext:
        p = p / IPv6ExtHdrDestOpt()
    return raw(p / UDP(sport=sport, dport=53) / Raw(b"query"))


def tcp(src, sport):
    return raw(IPv6(src=src, dst=X) / TCP(sport=sport, dport=443, seq=1, flags="S"))


def echo(src, ident):
    return raw(IPv6(src=src, dst=X) / ICMPv6EchoRequest(id=ident, seq=1, data=b"ping"))


def err(src, dst, icmp, quote):
    return E / IPv6(src=src, dst=dst) / icmp / Raw(quote)


def frames():
    return [
        E / IPv6(udp(A, 5000)),
        E / IPv6(tcp(A, 40000)),
        E / IPv6(echo(A, 7)),
        err(X, NAT, ICMPv6DestUnreach(code=4), udp(NAT, 1024)),
        err(R, NAT, ICMPv6PacketTooBig(mtu=1280), tcp(NAT, 1025)),
        err(R, NAT, ICMPv6TimeExceeded(code=0), echo(NAT, 1024)),
        err(R, NAT, ICMPv6TimeExceeded(code=0), udp(NAT, 1024, ext=True)),
        err(R, NAT, ICMPv6DestUnreach(code=1), tcp(NAT, 1025)[:48]),
        err(R, NAT, ICMPv6ParamProblem(code=0, ptr=6), udp(NAT, 9999)),
        err(R, OTHER, ICMPv6DestUnreach(code=3), udp(NAT, 1024)),
        E / IPv6(src=R, dst=NAT) / ICMPv6EchoRequest(id=1, seq=1),
        err(R, NAT, ICMPv6DestUnreach(code=4), udp(NAT, 1024)[:30]),
        E / IPv6(src=R, dst=NAT) / IPv6ExtHdrFragment(offset=0, m=1, id=3, nh=58)
        / ICMPv6DestUnreach(code=4) / Raw(udp(NAT, 1024)),
    ]


def main():
    fr = frames()
    pkts = write_input(os.path.join(HERE, "input.pcap"), [raw(f) for f in fr])
    out = {"out": [], "icmp": []}

    def emit(k, i, frame):
        q = pkts[i].copy()
        q.data = bytearray(raw(frame))
        out[k].append(q)

    emit("out", 0, E / IPv6(udp(NAT, 1024)))
    emit("out", 1, E / IPv6(tcp(NAT, 1025)))
    emit("out", 2, E / IPv6(echo(NAT, 1024)))
    emit("icmp", 3, err(X, A, ICMPv6DestUnreach(code=4), udp(A, 5000)))
    emit("icmp", 4, err(R, A, ICMPv6PacketTooBig(mtu=1280), tcp(A, 40000)))
    emit("icmp", 5, err(R, A, ICMPv6TimeExceeded(code=0), echo(A, 7)))
    emit("icmp", 6, err(R, A, ICMPv6TimeExceeded(code=0), udp(A, 5000, ext=True)))
    emit("icmp", 7, err(R, A, ICMPv6DestUnreach(code=1), tcp(A, 40000)[:48]))
    # 8 an unknown flow: dropped.
    emit("icmp", 9, err(R, OTHER, ICMPv6DestUnreach(code=3), udp(A, 5000)))
    # 10 not an error, 11 a quote cut inside its header, 12 a fragmented
    # error: dropped.
    for k, v in out.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [2, 1])


main()
