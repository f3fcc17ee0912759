#!/usr/bin/python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

Packets are built with scapy; each element is modelled from Click's source and
documentation and the RFCs the elements follow (RFC 8200 fragmentation, RFC 4443
ICMPv6 errors). Fragments are cut by scapy's fragment6 with the Fragment header
placed where RFC 8200 puts it. Run with /usr/bin/python3 (scapy installed there).
"""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import Pkt, write_input, write_todump, write_text, BASE_SEC  # noqa: E402
from scapy.all import (  # noqa: E402
    Ether, IPv6, UDP, TCP, Raw, ICMPv6EchoRequest, ICMPv6DestUnreach, ICMPv6TimeExceeded,
    ICMPv6PacketTooBig, IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt, IPv6ExtHdrRouting,
    IPv6ExtHdrFragment, ARP, fragment6,
)
from socket import inet_pton, AF_INET6  # noqa: E402

A = "02:00:00:00:00:01"
B = "02:00:00:00:00:02"
ENC = bytes.fromhex("02000000000b" "02000000000a" "86dd")  # EtherEncap's header
ME = "2001:db8::ff"


def a6(s):
    return inet_pton(AF_INET6, s)


def frames():
    s, d = "2001:db8::1", "2001:db8::2"
    out = []
    e = Ether(src=A, dst=B)
    # Good packets, hop limits 64, 1, 0, 255.
    out.append(e / IPv6(src=s, dst=d) / UDP(sport=1234, dport=53) / Raw(b"query" * 4))
    out.append(e / IPv6(src=s, dst=d, hlim=1) / UDP(sport=1234, dport=53) / Raw(b"x" * 10))
    out.append(e / IPv6(src=s, dst=d, hlim=0) / TCP(sport=40000, dport=80, flags="S"))
    out.append(e / IPv6(src=s, dst=d, hlim=255, tc=0x03, fl=0x12345) / TCP(sport=40001, dport=443))
    # No payload: 54-byte frame padded to 60; CheckIP6Header trims the padding.
    out.append(bytes(e / IPv6(src=s, dst=d, nh=59)) + b"\0" * 6)
    # ICMPv6 echo (hop limit 1: answered) and an ICMPv6 error (hop limit 1: not answered).
    out.append(e / IPv6(src=s, dst=d) / ICMPv6EchoRequest(id=7, seq=1, data=b"ping"))
    out.append(e / IPv6(src=s, dst=d, hlim=1) / ICMPv6EchoRequest(id=7, seq=2, data=b"ping"))
    out.append(e / IPv6(src=s, dst=d, hlim=1) / ICMPv6DestUnreach(code=3)
               / IPv6(src=d, dst=s) / UDP(sport=53, dport=1234))
    # Extension headers: Hop-by-Hop, Destination Options, Routing, Destination Options, UDP.
    ext = (IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / IPv6ExtHdrRouting(addresses=["2001:db8::7"])
           / IPv6ExtHdrDestOpt() / UDP(sport=5000, dport=5001) / Raw(b"e" * 300))
    out.append(e / IPv6(src=s, dst=d) / ext)
    out.append(e / IPv6(src=s, dst=d, hlim=1) / IPv6ExtHdrHopByHop() / ICMPv6TimeExceeded()
               / IPv6(src=d, dst=s, hlim=0))
    # A 1500-byte IPv6 packet: fragmented at 1280 and at 200.
    out.append(e / IPv6(src=s, dst=d) / UDP(sport=7, dport=9) / Raw(bytes(range(256)) * 5 + b"z" * 172))
    # 1500 bytes with hop limit 1: the quote is cut at 1280.
    out.append(e / IPv6(src=s, dst=d, hlim=1) / UDP(sport=7, dport=9) / Raw(b"Q" * 1452))
    # A routing header too long for MTU 200 (unfragmentable part 192 + 8 + 8 > 200).
    rh = IPv6ExtHdrRouting(addresses=["2001:db8::%x" % i for i in range(1, 10)])
    out.append(e / IPv6(src=s, dst=d) / rh / UDP(sport=1, dport=2) / Raw(b"r" * 100))
    # Already a fragment: not fragmented again.
    out.append(e / IPv6(src=s, dst=d) / IPv6ExtHdrFragment(id=99, m=1) / UDP(sport=3, dport=4) / Raw(b"f" * 400))
    # Multicast destination (hop limit 1 and 64), multicast and unspecified sources.
    out.append(e / IPv6(src=s, dst="ff02::1", hlim=1) / UDP(sport=521, dport=521) / Raw(b"m" * 8))
    out.append(e / IPv6(src=s, dst="ff0e::1:2", hlim=64) / UDP(sport=521, dport=521) / Raw(b"M" * 300))
    out.append(e / IPv6(src="ff02::9", dst=d, hlim=1) / UDP(sport=521, dport=521))
    out.append(e / IPv6(src="::", dst=d, hlim=1) / UDP(sport=546, dport=547))
    # Bad: version 4, payload length beyond the frame, truncated header,
    # BADADDRS source, all-ones source.
    v4 = bytearray(bytes(e / IPv6(src=s, dst=d) / UDP(sport=1, dport=2)))
    v4[14] = 0x40
    out.append(bytes(v4))
    long = bytearray(bytes(e / IPv6(src=s, dst=d) / UDP(sport=1, dport=2) / Raw(b"L" * 20)))
    long[18:20] = struct.pack("!H", 29)
    out.append(bytes(long))
    out.append(bytes(e / IPv6(src=s, dst=d) / UDP(sport=1, dport=2))[:14 + 30])
    out.append(e / IPv6(src="2001:db8::bad", dst=d) / UDP(sport=1, dport=2))
    out.append(e / IPv6(src="ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", dst=d) / UDP(sport=1, dport=2))
    # Not IPv6.
    out.append(Ether(src=A, dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="10.0.0.1"))
    return [bytes(f) for f in out]


# ------------------------------------------------------------------ elements

def check(p, bad):
    """CheckIP6Header: (port, packet); trims to the payload length."""
    d = p.data
    if len(d) < 40 or d[0] >> 4 != 6:
        return 1
    plen = struct.unpack("!H", d[4:6])[0]
    if plen > len(d) - 40 or bytes(d[8:24]) in bad:
        return 1
    p.take(len(d) - 40 - plen)
    p.nh = 0
    return 0


def dec(p):
    if p.data[7] <= 1:
        return 1
    p.data[7] -= 1
    return 0


def set_dscp(p, v):
    tc = ((p.data[0] & 0xF) << 4 | p.data[1] >> 4)
    tc = (tc & 3) | (v << 2)
    p.data[0] = 0x60 | tc >> 4
    p.data[1] = (tc & 0xF) << 4 | (p.data[1] & 0xF)


def unfragmentable(d):
    """RFC 8200 4.5: length of the unfragmentable part and the offset of
    the Next Header byte that names what follows it."""
    nh, off, end, pos = d[6], 40, 40, 6
    while nh in (0, 60, 43):
        ln = (d[off + 1] + 1) * 8
        if nh != 60:
            end, pos = off + ln, off
        nh = d[off]
        off += ln
    return end, pos


class Fragmenter:
    def __init__(self, mtu):
        self.mtu, self.ident, self.fragments, self.drops = mtu, 1, 0, 0

    def push(self, p):
        """(port, [packets])"""
        d = bytes(p.data)
        if len(d) <= self.mtu:
            return 0, [p]
        end, pos = unfragmentable(d)
        nxt = d[pos]
        if nxt == 44 or (self.mtu - end - 8) // 8 == 0:
            self.drops += 1
            return 1, [p]
        # Insert a Fragment header (id set) where RFC 8200 puts it; scapy cuts.
        with_fh = bytearray(d[:end]) + bytes(IPv6ExtHdrFragment(nh=nxt, id=self.ident)) + d[end:]
        with_fh[pos] = 44
        with_fh[4:6] = struct.pack("!H", len(with_fh) - 40)
        self.ident += 1
        frags = fragment6(IPv6(bytes(with_fh)), self.mtu)
        out = []
        for f in frags:
            q = p.copy()
            q.data = bytearray(bytes(f))
            out.append(q)
        assert all(len(q.data) <= self.mtu for q in out) and len(out) > 1
        self.fragments += len(out)
        return 0, out


class Icmp6Error:
    def __init__(self, typ, code, pmtu=1500):
        self.typ, self.code, self.pmtu, self.drops = typ, code, pmtu, 0

    def upper(self, d):
        nh, off = d[6], 40
        while nh in (0, 60, 43, 44, 51):
            if nh == 44:
                ln = 8
            elif nh == 51:
                ln = (d[off + 1] + 2) * 4
            else:
                ln = (d[off + 1] + 1) * 8
            nh = d[off]
            off += ln
        return nh, off

    def push(self, p):
        d = bytes(p.data)
        src, dst = d[8:24], d[24:40]
        nh, off = self.upper(d)
        may_multicast = self.typ == 2 or (self.typ == 4 and self.code == 2)
        if ((nh == 58 and off < len(d) and (d[off] < 128 or d[off] == 137))
                or (dst[0] == 0xFF and not may_multicast)
                or src == bytes(16) or src[0] == 0xFF or src == a6("::1")):
            self.drops += 1
            return None
        quote = d[:1280 - 48]
        if self.typ == 3:
            m = ICMPv6TimeExceeded(code=self.code)
        elif self.typ == 2:
            m = ICMPv6PacketTooBig(code=self.code, mtu=self.pmtu)
        else:
            raise ValueError(self.typ)
        ip = IPv6(src=ME, dst=IPv6(d).src, hlim=255) / m / Raw(quote)
        q = Pkt(bytes(ip), BASE_SEC, 0)
        q.nh = 0
        return q


def mirror(p):
    d = p.data
    d[8:24], d[24:40] = bytes(d[24:40]), bytes(d[8:24])
    if d[6] in (6, 17) and len(d) >= 48:
        d[40:42], d[42:44] = bytes(d[42:44]), bytes(d[40:42])


def encap(p, src, dst, hlim=250, tc=0, proto=41):
    h = struct.pack("!IHBB", 6 << 28 | tc << 20, len(p.data), proto, hlim) + a6(src) + dst
    p.data = bytearray(h) + p.data


def ether_out(p):
    q = p.copy()
    q.data = bytearray(ENC) + q.data
    return q


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    bad_src = {a6("2001:db8::bad"), b"\xff" * 16}
    outs = {k: [] for k in ("bad", "forward", "hlim", "tunnel", "frag200", "toobig", "encap", "drop")}
    drops = count = dec_drops = lost = 0
    frag, small = Fragmenter(1280), Fragmenter(200)
    te, ptb = Icmp6Error(3, 0), Icmp6Error(2, 0, 200)
    for p in pkts:
        if p.data[12:14] != b"\x86\xdd":
            continue
        frame = p.copy()
        p.pull(14)
        if check(p, bad_src):
            # Unstrip(14): the frame as it came, not trimmed.
            drops += 1
            outs["bad"].append(frame)
            continue
        count += 1
        # t[0]
        q = p.copy()
        if dec(q):
            dec_drops += 1
            r = te.push(q)
            if r:
                outs["hlim"].append(ether_out(r))
        else:
            set_dscp(q, 46)
            port, fr = frag.push(q)
            assert port == 0
            outs["forward"] += [ether_out(x) for x in fr]
        # t[1]
        q = p.copy()
        mirror(q)
        encap(q, "2001:db8:ffff::1", bytes(q.data[24:40]), hlim=64, tc=32)
        outs["tunnel"].append(ether_out(q))
        # t[2]
        q = p.copy()
        port, fr = small.push(q)
        if port == 0:
            outs["frag200"] += [ether_out(x) for x in fr]
        else:
            r = ptb.push(fr[0])
            if r:
                outs["toobig"].append(ether_out(r))
        # t[3]
        q = p.copy()
        encap(q, "2001:db8:ffff::2", a6("2001:db8:eeee::1"))
        outs["encap"].append(ether_out(q))
        # t[4]: IP6Drop(DETERMINISTIC true, UDROPRATE 0.04): the n-th packet
        # (from 1) goes when n mod 100 < 4.
        if count % 100 >= 4:
            outs["drop"].append(ether_out(p.copy()))
        else:
            lost += 1
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"),
               [drops, count, dec_drops, te.drops, frag.fragments, frag.drops,
                small.fragments, small.drops, ptb.drops, lost, count])


main()
