#!/usr/bin/python3
"""Generates input.pcap and the expected outputs of this case with scapy
(independent of pronto). Run with /usr/bin/python3 (scapy installed there).

The rewriter is modelled from pronto's ICMPPingRewriter documentation (IPv6
goes past Click): a new echo request on the pattern input gets the
pattern's source address and the next identifier of the `#` range; replies
to it on input 1 get the host's address and identifier back; the ICMPv6
checksum of every rewritten packet is what scapy computes from scratch over
the IPv6 pseudo-header. Packets with no mapping are dropped (`drop`; an
IPv4 echo on the IPv6 pattern counts as a mapping failure).
"""
import ipaddress, os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import write_input, write_todump, write_text  # noqa: E402
from scapy.all import (Ether, IP, IPv6, UDP, ICMP, Raw, ICMPv6EchoRequest,  # noqa: E402
                       ICMPv6EchoReply, ICMPv6DestUnreach, IPv6ExtHdrHopByHop,
                       IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, raw)

A, B = "2001:db8:1::a", "2001:db8:1::b"   # inside hosts
X = "2001:db8:3::9"                       # a host outside
NAT = "2001:db8:ffff::1"                  # the pattern's address
E = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def frames():
    return [
        E / IPv6(src=A, dst=X) / ICMPv6EchoRequest(id=7, seq=1, data=b"ping a"),
        E / IPv6(src=B, dst=X, hlim=9) / ICMPv6EchoRequest(id=7, seq=1, data=b"ping b"),
        E / IPv6(src=X, dst=NAT) / ICMPv6EchoReply(id=1024, seq=1, data=b"ping a"),
        E / IPv6(src=X, dst=NAT) / ICMPv6EchoReply(id=1025, seq=1, data=b"ping b"),
        E / IPv6(src=X, dst=NAT) / ICMPv6EchoReply(id=2000, seq=1, data=b"stray"),
        E / IPv6(src=A, dst=X) / ICMPv6EchoRequest(id=7, seq=2, data=b"ping a again"),
        E / IPv6(src=A, dst=X) / IPv6ExtHdrHopByHop() / ICMPv6EchoRequest(id=9, seq=1),
        E / IPv6(src=X, dst=NAT) / IPv6ExtHdrDestOpt() / ICMPv6EchoReply(id=1026, seq=1),
        E / IPv6(src=A, dst=X) / ICMPv6DestUnreach(code=4) / IPv6(src=X, dst=A) / UDP(sport=53, dport=999),
        E / IP(src="192.168.1.2", dst="198.51.100.5") / ICMP(type=8, id=5, seq=1),
        E / IPv6(src=A, dst=X) / UDP(sport=5000, dport=53) / Raw(b"udp"),
        E / IPv6(src=A, dst=X) / IPv6ExtHdrFragment(offset=2, m=0, id=9, nh=58) / Raw(b"later fragment"),
        E / IPv6(src=X, dst=NAT) / ICMPv6EchoReply(id=1024, seq=2, data=b"ping a again"),
    ]


def rebuilt(frame, src=None, dst=None, ident=None):
    """The frame with the fields given replaced and the ICMPv6 checksum
    computed again by scapy."""
    p = Ether(raw(frame))
    ip = p[IPv6]
    if src:
        ip.src = src
    if dst:
        ip.dst = dst
    echo = p[ICMPv6EchoRequest] if ICMPv6EchoRequest in p else p[ICMPv6EchoReply]
    echo.id = ident
    del echo.cksum
    return raw(p)


def plus1(v):
    """An identifier plus one as the table handler prints it (Click's
    arithmetic on a little-endian host: one added to the byte-swapped
    value)."""
    sw = ((v & 0xFF) << 8) | (v >> 8)
    sw = (sw + 1) & 0xFFFF
    return ((sw & 0xFF) << 8) | (sw >> 8)


def s(a):
    return ipaddress.IPv6Address(a).compressed


def main():
    fr = frames()
    pkts = write_input(os.path.join(HERE, "input.pcap"), [raw(f) for f in fr])
    out = {"out": [], "in": []}

    def emit(k, i, data):
        q = pkts[i].copy()
        q.data = bytearray(data)
        out[k].append(q)

    emit("out", 0, rebuilt(fr[0], src=NAT, ident=1024))
    emit("out", 1, rebuilt(fr[1], src=NAT, ident=1025))
    emit("in", 2, rebuilt(fr[2], dst=A, ident=7))
    emit("in", 3, rebuilt(fr[3], dst=B, ident=7))
    # 4 an unexpected reply: dropped.
    emit("out", 5, rebuilt(fr[5], src=NAT, ident=1024))
    emit("out", 6, rebuilt(fr[6], src=NAT, ident=1026))
    emit("in", 7, rebuilt(fr[7], dst=A, ident=9))
    # 8 not an echo, 9 IPv4 (a mapping failure), 10 UDP, 11 a later
    # fragment: dropped.
    emit("in", 12, rebuilt(fr[12], dst=A, ident=7))
    for k, v in out.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)

    # The table: IPv6 flows in creation order, forward entry then reply
    # entry; the run lasts milliseconds, so every expiry is 300 s.
    lines = []
    for host, ident, new in [(A, 7, 1024), (B, 7, 1025), (A, 9, 1026)]:
        lines.append("(%s, %s, %d) => (%s, %s, %d) [*0 1] i0 exp300"
                     % (s(host), s(X), ident, s(NAT), s(X), new))
        lines.append("(%s, %s, %d) => (%s, %s, %d) [0 *1] i0 exp300"
                     % (s(X), s(NAT), plus1(new), s(X), s(host), plus1(ident)))
    write_text(os.path.join(HERE, "expected.txt"),
               [3, 1, "%s 1024-65535 - - [3]" % s(NAT), "<drop>"] + lines)


main()
