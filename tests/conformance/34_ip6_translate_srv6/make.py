#!/usr/bin/python3
"""Generates input.pcap and the expected outputs of this case with scapy (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from scapy.all import (IP, IPv6, TCP, UDP, ICMP, ICMPv6EchoRequest, ICMPv6EchoReply,  # noqa: E402
                       ICMPv6DestUnreach, ICMPv6PacketTooBig, ICMPv6TimeExceeded,
                       ICMPv6ParamProblem, ICMPv6ND_NS, IPv6ExtHdrFragment,
                       IPv6ExtHdrDestOpt, IPv6ExtHdrRouting, IPv6ExtHdrSegmentRouting,
                       IPerror, UDPerror, ICMPerror, IPOption_RR, IPOption_LSRR, PadN, Raw, raw)
import ipaddress  # noqa: E402

A4, B4, R4 = "192.0.2.1", "198.51.100.7", "203.0.113.9"
M = lambda a: "::ffff:" + a
P56 = ipaddress.IPv6Address("2001:db8:122:300::").packed


def p56(a):
    """RFC 6052 /56: prefix bytes 0-6, IPv4 bytes at 7, 9, 10, 11."""
    v = ipaddress.IPv4Address(a).packed
    b = bytearray(P56[:7]) + bytes(9)
    b[7], b[9], b[10], b[11] = v[0], v[1], v[2], v[3]
    return str(ipaddress.IPv6Address(bytes(b)))


def eth6(pkt):
    return ether(HOST_B, HOST_A, 0x86DD, raw(pkt), pad=False)


def eth4(pkt):
    return ether(HOST_B, HOST_A, 0x0800, raw(pkt), pad=False)


def v4_inputs():
    return [
        IP(src=A4, dst=B4, ttl=64, id=1) / UDP(sport=1000, dport=7777) / b"query",
        IP(src=A4, dst=B4, ttl=17, id=2, flags="DF") / TCP(sport=40000, dport=80, seq=7, flags="PA") / b"GET /",
        IP(src=A4, dst=B4, id=3) / UDP(sport=5, dport=6, chksum=0) / b"nocsum",
        IP(src=A4, dst=B4, id=4) / ICMP(type=8, id=0x1234, seq=1) / b"ping",
        IP(src=B4, dst=A4, id=5) / ICMP(type=0, id=0x1234, seq=1) / b"pong",
        IP(src=R4, dst=A4, id=6) / ICMP(type=3, code=3) / IPerror(raw(IP(src=A4, dst=B4, id=1) / UDP(sport=1000, dport=7777) / b"query")),
        IP(src=R4, dst=A4, id=7) / ICMP(type=3, code=4, nexthopmtu=1400) / IPerror(raw(IP(src=A4, dst=B4, id=9, flags="DF") / UDP(sport=7, dport=8) / b"big")),
        IP(src=R4, dst=A4, id=8) / ICMP(type=11, code=0) / IPerror(raw(IP(src=A4, dst=B4, ttl=1, id=4) / ICMP(type=8, id=0x1234, seq=2) / b"ping")),
        IP(src=R4, dst=A4, id=9) / ICMP(type=12, code=0, ptr=8) / IPerror(raw(IP(src=A4, dst=B4, id=10) / TCP(sport=1, dport=2, flags="S"))),
        IP(src=R4, dst=A4, id=10) / ICMP(type=3, code=2) / IPerror(raw(IP(src=A4, dst=B4, id=11, proto=253) / b"data")),
        IP(src=A4, dst=B4, id=0x4321, flags="MF", frag=0) / raw(TCP(sport=3, dport=4, seq=1, flags="A") / (b"x" * 12)),
        IP(src=A4, dst=B4, id=0x4321, frag=4, proto=6) / (b"y" * 8),
        IP(src=A4, dst=B4, id=12, options=[IPOption_RR(routers=["0.0.0.0"])]) / UDP(sport=9, dport=9) / b"rr",
        # dropped: source route, timestamp request, bad ICMP checksum, UDP fragment with checksum 0
        IP(src=A4, dst=B4, id=13, options=[IPOption_LSRR(routers=[R4])]) / UDP(sport=9, dport=9) / b"lsrr",
        IP(src=A4, dst=B4, id=14) / ICMP(type=13),
        IP(src=A4, dst=B4, id=15) / ICMP(type=8, chksum=0xbeef) / b"bad",
        IP(src=A4, dst=B4, id=16, flags="MF") / UDP(sport=1, dport=2, chksum=0, len=40) / b"frag",
    ]


def adjust(c, old, new):
    """One's-complement checksum c with address bytes old replaced by new."""
    s = (~c & 0xFFFF) + (~sum16(old) & 0xFFFF) + sum16(new)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def icmp6_of(ip):
    """The ICMPv6 layer translating the ICMPv4 of ip, or None to drop."""
    ic = ip[ICMP]
    if ic.type in (8, 0):
        cls = ICMPv6EchoRequest if ic.type == 8 else ICMPv6EchoReply
        return cls(id=ic.id, seq=ic.seq, data=bytes(ic.payload))
    return None


def translate46(ip, mp, drop):
    """The IPv6 packet for IPv4 packet ip with mapping mp, as RFC 7915 with Click's
    choices prescribes, or None."""
    ip = IP(raw(ip))
    if drop:
        return None
    frag = ip.flags.MF or ip.frag
    nh = 58 if ip.proto == 1 else ip.proto
    hdr = IPv6(src=mp(ip.src), dst=mp(ip.dst), hlim=ip.ttl, tc=0, fl=0)
    body = bytes(ip.payload)[:ip.len - ip.ihl * 4]
    if ip.proto == 1:
        ic = ip[ICMP]
        if ic.type in (8, 0):
            return hdr / icmp6_of(ip)
        inner = IP(bytes(ic.payload))
        q = inner_v6(inner, mp)
        t = {(3, 3): lambda: ICMPv6DestUnreach(code=4),
             (3, 4): lambda: ICMPv6PacketTooBig(mtu=ic.nexthopmtu + 20),
             (11, 0): lambda: ICMPv6TimeExceeded(code=0),
             (12, 0): lambda: ICMPv6ParamProblem(code=0, ptr={8: 7}[ic.ptr]),
             (3, 2): lambda: ICMPv6ParamProblem(code=1, ptr=6)}[(ic.type, ic.code)]()
        return hdr / t / q
    if frag:
        data = bytearray(body)
        if ip.frag == 0 and ip.proto == 6:
            put16(data, 16, adjust(be16(data, 16), ip_aton(ip.src) + ip_aton(ip.dst),
                                   v6b(mp(ip.src)) + v6b(mp(ip.dst))))
        return hdr / IPv6ExtHdrFragment(nh=nh, offset=ip.frag, m=ip.flags.MF, id=ip.id) / Raw(bytes(data))
    hdr.nh = nh
    l4 = IP(raw(ip)).payload
    if ip.proto in (6, 17):
        l4 = l4.__class__(raw(l4))
        del l4.chksum
    return hdr / l4


def v6b(a):
    return ipaddress.IPv6Address(a).packed


def inner_v6(inner, mp):
    """A quoted IPv4 packet (complete) translated; scapy recomputes the quoted
    checksums, which equals adjusting them when they were right."""
    h = IPv6(src=mp(inner.src), dst=mp(inner.dst), hlim=inner.ttl)
    if inner.proto == 1:
        ic = inner[ICMP]
        return h / ICMPv6EchoRequest(id=ic.id, seq=ic.seq, data=bytes(ic.payload))
    if inner.proto in (6, 17):
        l4 = inner.payload.__class__(raw(inner.payload))
        del l4.chksum
        return h / l4
    h.nh = inner.proto
    return h / Raw(bytes(inner.payload))


def v6_inputs():
    S, D = M("10.0.0.1"), M("10.0.0.2")
    quoted = IPv6(src=S, dst=D, hlim=9) / UDP(sport=1111, dport=2222) / b"payload"
    return [
        IPv6(src=S, dst=D, hlim=33) / UDP(sport=1000, dport=7777) / b"hello6",
        IPv6(src=S, dst=D) / TCP(sport=40000, dport=443, seq=5, flags="S"),
        IPv6(src=D, dst=S) / ICMPv6EchoReply(id=7, seq=8, data=b"pong6"),
        IPv6(src=S, dst=D) / IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0\0\0\0")]) / UDP(sport=1, dport=2) / b"dopt",
        IPv6(src=S, dst=D) / IPv6ExtHdrFragment(nh=17, offset=3, m=1, id=0xabcd1234) / (b"z" * 16),
        IPv6(src=M("10.9.9.9"), dst=S) / ICMPv6PacketTooBig(mtu=1300) / quoted,
        IPv6(src=M("10.9.9.9"), dst=S) / ICMPv6DestUnreach(code=4) / quoted,
        IPv6(src=M("10.9.9.9"), dst=S) / ICMPv6ParamProblem(code=0, ptr=24) / quoted,
        # dropped: not mapped, Neighbor Solicitation, bad checksum
        IPv6(src="2001:db8::1", dst=D) / UDP(sport=1, dport=2) / b"native",
        IPv6(src=S, dst=D) / ICMPv6ND_NS(tgt=D),
        IPv6(src=S, dst=D) / ICMPv6EchoRequest(cksum=0x1111, data=b"bad"),
    ]


def translate64(p6):
    """The IPv4 packet for IPv6 packet p6, or None."""
    p6 = IPv6(raw(p6))
    try:
        s4 = str(ipaddress.IPv6Address(p6.src).ipv4_mapped)
        d4 = str(ipaddress.IPv6Address(p6.dst).ipv4_mapped)
    except Exception:
        return None
    if s4 == "None" or d4 == "None":
        return None
    layer = p6.payload
    frag = None
    while layer.__class__ in (IPv6ExtHdrDestOpt, IPv6ExtHdrFragment):
        if isinstance(layer, IPv6ExtHdrFragment):
            frag = layer
        layer = layer.payload
    if frag is not None:
        ip = IP(src=s4, dst=d4, ttl=p6.hlim, tos=0, id=frag.id & 0xFFFF,
                flags="MF" if frag.m else 0, frag=frag.offset, proto=frag.nh)
        return ip / Raw(bytes(layer))
    ip = IP(src=s4, dst=d4, ttl=p6.hlim, tos=0, id=0, flags="DF")
    if isinstance(layer, (UDP, TCP)):
        l4 = layer.__class__(raw(layer))
        del l4.chksum
        return ip / l4
    if isinstance(layer, ICMPv6EchoReply):
        return ip / ICMP(type=0, id=layer.id, seq=layer.seq) / layer.data
    if isinstance(layer, ICMPv6PacketTooBig):
        return ip / ICMP(type=3, code=4, nexthopmtu=layer.mtu - 20) / inner_v4(layer.payload)
    if isinstance(layer, ICMPv6DestUnreach):
        return ip / ICMP(type=3, code=3) / inner_v4(layer.payload)
    if isinstance(layer, ICMPv6ParamProblem):
        return ip / ICMP(type=12, code=0, ptr=16) / inner_v4(layer.payload)
    return None


def inner_v4(q):
    q = IPv6(raw(q))
    l4 = q.payload.__class__(raw(q.payload))
    del l4.chksum
    return IPerror(raw(IP(src=str(ipaddress.IPv6Address(q.src).ipv4_mapped),
                          dst=str(ipaddress.IPv6Address(q.dst).ipv4_mapped),
                          ttl=q.hlim, id=0, flags="DF") / l4))


SID_E, SRC_H = "2001:db8:e::1", "2001:db8::ff"
SEG_A, SEG_B = "2001:db8:a::1", "2001:db8:b::1"


def sr_inputs():
    fin, s1, s2 = "2001:db8::99", "2001:db8:1::1", "2001:db8:2::1"
    src = "2001:db8::1"
    u = UDP(sport=4000, dport=5000) / b"segment"
    inner = IPv6(src="2001:db8:5::5", dst="2001:db8:6::6") / UDP(sport=1, dport=2) / b"inner"
    bad_sl = bytearray(raw(IPv6(src=src, dst=s2) / IPv6ExtHdrSegmentRouting(nh=17, addresses=[fin, s1, s2], segleft=2, lastentry=2) / u))
    bad_sl[43] = 5
    cut = raw(IPv6(src=src, dst=s2) / IPv6ExtHdrSegmentRouting(nh=17, addresses=[fin, s1, s2], segleft=2, lastentry=2) / u)[:80]
    return [
        IPv6(src=src, dst=s2) / IPv6ExtHdrSegmentRouting(nh=17, addresses=[fin, s1, s2], segleft=2, lastentry=2) / u,
        IPv6(src=src, dst=fin) / IPv6ExtHdrSegmentRouting(nh=17, addresses=[fin, s1, s2], segleft=0, lastentry=2) / u,
        IPv6(src=SRC_H, dst=SID_E) / IPv6ExtHdrSegmentRouting(nh=41, addresses=[SID_E], segleft=0, lastentry=0) / inner,
        IPv6(src=src, dst=s1, nh=43) / raw(IPv6ExtHdrSegmentRouting(nh=17, addresses=[fin, s1], segleft=1, lastentry=1, len=6)) / (b"\x01\x06" + bytes(6) + raw(u)),
        IPv6(src=src, dst=fin) / IPv6ExtHdrRouting(nh=17, addresses=[fin], segleft=0) / u,
        IPv6(bytes(bad_sl)),
        IPv6(cut),
    ]


def main():
    frames = [eth4(p) for p in v4_inputs()] + [eth6(p) for p in v6_inputs()] + [eth6(p) for p in sr_inputs()]
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames)
    outs = {k: [] for k in ("46", "46p", "hencap", "64", "insert", "end", "decap", "at")}
    drops = {k: 0 for k in ("pt46", "pt46p", "h", "pt64", "e", "p", "d", "at", "fail")}
    flows = {}
    n4 = len(v4_inputs())
    n6 = len(v6_inputs())
    mapped = M
    for i, p in enumerate(pkts):
        ipb = bytes(p.data[14:])
        et = be16(p.data, 12)

        def emit(k, l3, etype):
            q = p.copy()
            q.data = bytearray(ether(HOST_B, HOST_A, etype, bytes(l3), pad=False))
            outs[k].append(q)
        if et == 0x0800:
            dropped = i in (n4 - 4, n4 - 3, n4 - 2, n4 - 1)
            for key, mp, dn in (("46", mapped, "pt46"), ("46p", p56, "pt46p")):
                t = translate46(IP(ipb), mp, dropped)
                if t is None:
                    drops[dn] += 1
                else:
                    emit(key, raw(t), 0x86DD)
            ip4 = IP(ipb)
            srh = IPv6ExtHdrSegmentRouting(nh=4, addresses=[SID_E], segleft=0, lastentry=0)
            outer = IPv6(src=SRC_H, dst=SID_E, tc=ip4.tos, fl=0, hlim=64, nh=43, plen=len(raw(srh)) + len(ipb))
            emit("hencap", raw(outer) + raw(srh) + ipb, 0x86DD)
        elif ipb[6] == 43:
            b = bytearray(ipb)
            rtype, sl, le = b[42], b[43], b[44]
            hl = (b[41] + 1) * 8
            ok = len(b) >= 40 + hl and (rtype != 4 or (sl <= le and 8 + (le + 1) * 16 <= hl))
            if not ok:
                drops["p"] += 1
                continue
            if rtype == 4 and sl > 0:
                b[43] = sl - 1
                seg = 48 + (sl - 1) * 16
                b[24:40] = b[seg:seg + 16]
                emit("end", b, 0x86DD)
                continue
            if rtype != 4:
                emit("decap", b, 0x86DD)
                continue
            if b[40] == 41:
                emit("decap", b[40 + hl:], 0x86DD)
                continue
            nb = bytearray(b[:40]) + b[40 + hl:]
            nb[6] = b[40]
            put16(nb, 4, be16(b, 4) - hl)
            nb[24:40] = b[48:64]
            emit("decap", nb, 0x86DD)
        else:
            t = translate64(IPv6(ipb))
            if t is None:
                drops["pt64"] += 1
            else:
                emit("64", raw(t), 0x0800)
            b = bytearray(ipb)
            srh = IPv6ExtHdrSegmentRouting(nh=b[6], addresses=[str(ipaddress.IPv6Address(bytes(b[24:40]))), SEG_A, SEG_B], segleft=2, lastentry=2)
            nb = bytearray(b[:40]) + raw(srh)[:56] + b[40:]
            nb[6] = 43
            put16(nb, 4, be16(b, 4) + 56)
            nb[24:40] = ipaddress.IPv6Address(SEG_B).packed
            emit("insert", nb, 0x86DD)
            q6 = IPv6(ipb)
            if q6.nh not in (6, 17, 58):
                drops["at"] += 1
                continue
            # ICMPv6 maps with ports 0, except an echo (request or reply)
            # under port mapping: its identifier is the inner port, the
            # remote port 0 (RFC 6146).
            echo = q6.nh == 58 and q6.payload.type in (128, 129)
            if q6.nh != 58:
                ports = (q6.payload.sport, q6.payload.dport)
            elif echo:
                ports = (q6.payload.id, 0)
            else:
                ports = (0, 0)
            key = (q6.src, ports[0], q6.dst, ports[1])
            if key not in flows:
                if 5000 + len(flows) > 5004:
                    drops["at"] += 1
                    drops["fail"] += 1
                    continue
                flows[key] = 5000 + len(flows)
            q6.src = M("10.0.0.9")
            if q6.nh == 58:
                if echo:
                    q6.payload.id = flows[key]
                del q6.payload.cksum
            else:
                q6.payload.sport = flows[key]
                del q6.payload.chksum
            emit("at", raw(IPv6(raw(q6))), 0x86DD)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    counts = [drops[k] for k in ("pt46", "pt46p", "h", "pt64", "e", "p", "d", "at", "fail")]
    write_text(os.path.join(HERE, "expected.txt"), counts + [len(flows)])


if __name__ == "__main__":
    main()
