#!/usr/bin/python3
"""Generates input.pcap and the expected outputs of this case with scapy
(independent of pronto). Run with /usr/bin/python3 (scapy installed there).

Modelled from pronto's IPAddrRewriter, IPAddrPairRewriter and ICMPRewriter
documentation (IPv6 goes past Click): a mapped packet has its addresses
replaced and its TCP/UDP/ICMPv6 checksum computed again by scapy over the
new pseudo-header (a zero UDP checksum kept; a later fragment carries no
transport header, its bytes unchanged); an ICMPv6 error about a mapped
flow is the same error about the packet as the inside host sent it, to
that host, its checksum computed by scapy.
"""
import os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import write_input, write_todump, write_text  # noqa: E402
from scapy.all import (Ether, IP, IPv6, TCP, UDP, Raw, ICMPv6EchoRequest,  # noqa: E402
                       ICMPv6EchoReply, ICMPv6DestUnreach, ICMPv6PacketTooBig,
                       IPv6ExtHdrFragment, raw)

A = "2001:db8:1::a"          # an inside host
B = "2001:db8:1::b"          # another one
X = "2001:db8:3::9"          # a server outside
Y = "2001:db8:3::7"          # another one
R = "2001:db8:4::1"          # a router
NAT1 = "2001:db8:ffff::1"    # IPAddrRewriter's range: A gets ::1, B ::2
NAT1B = "2001:db8:ffff::2"
NAT2 = "2001:db8:ffff::20"   # IPAddrPairRewriter's source address
VIP, BACK = "2001:db8::80", "2001:db8:2::5"
E = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def udp(src, dst, zero=False):
    u = UDP(sport=5000, dport=53, chksum=0) if zero else UDP(sport=5000, dport=53)
    return raw(IPv6(src=src, dst=dst) / u / Raw(b"query"))


def udp_back(src, dst):
    return raw(IPv6(src=src, dst=dst) / UDP(sport=53, dport=5000) / Raw(b"answer"))


def tcp(src, dst, sport=40000, dport=443, flags="S"):
    return raw(IPv6(src=src, dst=dst) / TCP(sport=sport, dport=dport, seq=1, flags=flags))


def first_frag(src, dst):
    return raw(IPv6(src=src, dst=dst) / IPv6ExtHdrFragment(offset=0, m=1, id=5, nh=17)
               / UDP(sport=5000, dport=53) / Raw(b"first part"))


def later_frag(src, dst):
    return raw(IPv6(src=src, dst=dst) / IPv6ExtHdrFragment(offset=3, m=0, id=5, nh=17)
               / Raw(b"\x12\x34second part"))


def frames():
    return [
        E / IPv6(udp(A, X)),
        E / IPv6(tcp(A, X)),
        E / IPv6(src=A, dst=X) / ICMPv6EchoRequest(id=3, seq=1, data=b"ping"),
        E / IPv6(udp(A, X, zero=True)),
        E / IPv6(first_frag(A, X)),
        E / IPv6(later_frag(A, X)),
        E / IPv6(udp_back(X, NAT1)),
        E / IPv6(src=X, dst=NAT1) / ICMPv6EchoReply(id=3, seq=1, data=b"ping"),
        E / IPv6(src=X, dst=NAT1) / ICMPv6DestUnreach(code=4) / Raw(udp(NAT1, X)),
        E / IPv6(tcp(A, VIP, 50000, 80)),
        E / IPv6(tcp(BACK, NAT2, 80, 50000, "SA")),
        E / IPv6(src=R, dst=NAT2) / ICMPv6PacketTooBig(mtu=1280) / Raw(tcp(NAT2, BACK, 50000, 80)),
        E / IP(src="192.0.2.1", dst="198.51.100.1") / UDP(sport=1, dport=2) / Raw(b"v4"),
        E / IPv6(udp_back(Y, "2001:db8:ffff::9")),
        E / IPv6(tcp(B, X)),
        E / IPv6(tcp(X, NAT1B, 443, 40000, "SA")),
    ]


def replaced(data, src=None, dst=None):
    """An IPv6 packet with addresses replaced and its transport checksum
    computed again by scapy (a zero UDP checksum and a later fragment's
    bytes kept)."""
    p = IPv6(data)
    if src:
        p.src = src
    if dst:
        p.dst = dst
    frag = p.getlayer(IPv6ExtHdrFragment)
    if frag is not None and frag.offset != 0:
        return raw(p)
    for layer, field in ((TCP, "chksum"), (UDP, "chksum"), (ICMPv6EchoRequest, "cksum"),
                         (ICMPv6EchoReply, "cksum")):
        if layer in p and not (layer is UDP and p[UDP].chksum == 0):
            delattr(p[layer], field)
    return raw(p)


def main():
    fr = frames()
    pkts = write_input(os.path.join(HERE, "input.pcap"), [raw(f) for f in fr])
    out = {"out": [], "back": [], "icmp": []}

    def emit(k, i, data):
        q = pkts[i].copy()
        q.data = bytearray(raw(fr[i])[:14] + data)
        out[k].append(q)

    def ip(i):
        return raw(fr[i][IPv6])

    for i in range(6):
        emit("out", i, replaced(ip(i), src=NAT1))
    emit("back", 6, replaced(ip(6), dst=A))
    emit("back", 7, replaced(ip(7), dst=A))
    emit("icmp", 8, raw(IPv6(src=X, dst=A) / ICMPv6DestUnreach(code=4) / Raw(udp(A, X))))
    emit("out", 9, replaced(ip(9), src=NAT2, dst=BACK))
    emit("back", 10, replaced(ip(10), src=VIP, dst=A))
    emit("icmp", 11, raw(IPv6(src=R, dst=A) / ICMPv6PacketTooBig(mtu=1280)
                         / Raw(tcp(A, VIP, 50000, 80))))
    # 12 IPv4 on the IPv6 pattern: a mapping failure, dropped.
    emit("back", 13, ip(13))
    emit("out", 14, replaced(ip(14), src=NAT1B))
    emit("back", 15, replaced(ip(15), dst=B))
    for k, v in out.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    # Tables: the forward entry, then the reply entry, printed as the
    # IPv4 ones are (an IPAddrRewriter reply entry keys the destination
    # only, so both its printed fields are the unspecified address).
    write_text(os.path.join(HERE, "expected.txt"), [
        2, 1,
        "%s => %s [*0 1] i0 exp7200" % (A, NAT1),
        ":: => :: [0 *1] i0 exp7200",
        "%s => %s [*0 1] i0 exp7200" % (B, NAT1B),
        ":: => :: [0 *1] i0 exp7200",
        1,
        "(%s, %s) => (%s, %s) [*0 1] i0 exp7200" % (A, VIP, NAT2, BACK),
        "(%s, %s) => (%s, %s) [0 *1] i0 exp7200" % (BACK, NAT2, VIP, A),
    ])


main()
