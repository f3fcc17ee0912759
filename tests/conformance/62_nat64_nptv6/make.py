#!/usr/bin/python3
"""Generates input.pcap and the expected outputs of this case with scapy
(independent of pronto): RFC 7915 translation with RFC 6052 addresses and
RFC 6146 address-and-port mapping for NAT64, RFC 6296 for NPTv6."""
import ipaddress, os, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403
from scapy.all import (IP, IPv6, TCP, UDP, ICMP, ICMPv6EchoRequest, ICMPv6EchoReply,  # noqa: E402
                       ICMPv6DestUnreach, IPerror, raw)

H6, S4, POOL, R4 = "2001:db8:aaaa::7", "203.0.113.9", "198.51.100.1", "192.0.2.1"


def wk(a):
    """RFC 6052 well-known prefix 64:ff9b::/96."""
    return str(ipaddress.IPv6Address(b"\0\x64\xff\x9b" + bytes(8) + ipaddress.IPv4Address(a).packed))


S6 = wk(S4)


def npt_map(addr, frm, to):
    """RFC 6296 section 3.1 for /48 prefixes: replace the first 48 bits, add
    the one's complement difference of the prefix sums to bits 48-63
    (0xFFFF written as 0); None when the subnet word is 0xFFFF."""
    a = bytearray(ipaddress.IPv6Address(addr).packed)
    f, t = ipaddress.IPv6Address(frm).packed, ipaddress.IPv6Address(to).packed
    if a[6:8] == b"\xff\xff":
        return None

    def s(b):
        return fold(sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, 6, 2)))
    adj = fold(s(f) + (~s(t) & 0xFFFF))
    a[0:6] = t[0:6]
    w = fold(int.from_bytes(a[6:8], "big") + adj)
    a[6:8] = (0 if w == 0xFFFF else w).to_bytes(2, "big")
    return str(ipaddress.IPv6Address(bytes(a)))


def v4_of(p6, src, dst, sport):
    """The IPv4 packet RFC 7915 makes of IPv6 packet p6 (TOS 0, ID 0, DF,
    TTL = hop limit), addresses src and dst, source port sport (the
    mapping's), transport checksums computed afresh by scapy."""
    l4 = p6.payload.copy()
    l4.sport = sport
    del l4.chksum
    return IP(src=src, dst=dst, tos=0, id=0, flags="DF", ttl=p6.hlim) / l4


def v6_of(p4, src, dst, dport):
    """The IPv6 packet RFC 7915 makes of IPv4 packet p4 (traffic class and
    flow label 0, hop limit = TTL), destination port dport (the mapping's
    IPv6 side)."""
    l4 = p4.payload.copy()
    l4.dport = dport
    del l4.chksum
    return IPv6(src=src, dst=dst, tc=0, fl=0, hlim=p4.ttl) / l4


def main():
    syn6 = IPv6(src=H6, dst=S6, hlim=64) / TCP(sport=40000, dport=80, seq=7, flags="S")
    udp6 = IPv6(src=H6, dst=S6, hlim=64) / UDP(sport=5000, dport=53) / b"query"
    echo6 = IPv6(src=H6, dst=S6, hlim=64) / ICMPv6EchoRequest(id=0x77, seq=1, data=b"ping")
    # NAT64: ports from the host's first block, one per protocol.
    synack4 = IP(src=S4, dst=POOL, ttl=50) / TCP(sport=80, dport=1024, seq=9, ack=8, flags="SA")
    udp4 = IP(src=S4, dst=POOL, ttl=50) / UDP(sport=53, dport=1024) / b"answer"
    reply4 = IP(src=S4, dst=POOL, ttl=50) / ICMP(type=0, id=1024, seq=1) / b"ping"
    udp_out4 = v4_of(udp6, POOL, S4, 1024)
    unreach4 = IP(src=R4, dst=POOL, ttl=60) / ICMP(type=3, code=3) / IPerror(raw(udp_out4))
    stray4 = IP(src=S4, dst=POOL) / UDP(sport=53, dport=1999) / b"stray"
    ack6 = IPv6(src=H6, dst=S6) / TCP(sport=40001, dport=80, flags="A")
    outside6 = IPv6(src=H6, dst="2001:db8::1") / UDP(sport=1, dport=2) / b"x"
    # NPTv6.
    I, E = "fd01:203:405::", "2001:db8:1::"
    npt_in = [
        IPv6(src="fd01:203:405:1::1234", dst="2001:db8:99::80") / TCP(sport=40000, dport=80, flags="S"),
        IPv6(src="fd01:203:405:2ab0::1", dst="2001:db8:99::80") / UDP(sport=1, dport=2) / b"zero",
        IPv6(src="fd01:203:405:ffff::1", dst="2001:db8:99::80") / UDP(sport=1, dport=2) / b"ffff",
    ]
    npt_back = IPv6(src="2001:db8:99::80", dst="2001:db8:1:d550::1234") / UDP(sport=53, dport=5000) / b"back"

    inputs = [(0x86DD, syn6), (0x0800, synack4), (0x86DD, udp6), (0x0800, udp4),
              (0x86DD, echo6), (0x0800, reply4), (0x0800, unreach4), (0x0800, stray4),
              (0x86DD, ack6), (0x86DD, outside6)] + [(0x86DD, p) for p in npt_in] + [(0x86DD, npt_back)]
    frames = [ether(HOST_B, HOST_A, et, raw(p), pad=False) for et, p in inputs]
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames)

    expected = {
        0: ("nat4", v4_of(syn6, POOL, S4, 1024)),
        1: ("nat6", v6_of(synack4, S6, H6, 40000)),
        2: ("nat4", udp_out4),
        3: ("nat6", v6_of(udp4, S6, H6, 5000)),
        4: ("nat4", IP(src=POOL, dst=S4, id=0, flags="DF", ttl=64) / ICMP(type=8, id=1024, seq=1) / b"ping"),
        5: ("nat6", IPv6(src=S6, dst=H6, hlim=50) / ICMPv6EchoReply(id=0x77, seq=1, data=b"ping")),
        # Port unreachable (3/3) is ICMPv6 destination unreachable code 4,
        # quoting the UDP datagram as the host sent it.
        6: ("nat6", IPv6(src=wk(R4), dst=H6, hlim=60) / ICMPv6DestUnreach(code=4) / raw(udp6)),
    }
    outs = {k: [] for k in ("nat4", "nat6", "nptout", "nptin")}
    npt_drops = 0
    for i, p in enumerate(pkts):
        def emit(k, l3, etype):
            q = p.copy()
            q.data = bytearray(ether(HOST_B, HOST_A, etype, raw(l3), pad=False))
            outs[k].append(q)
        if i in expected:
            k, l3 = expected[i]
            emit(k, l3, 0x0800 if k == "nat4" else 0x86DD)
        elif 10 <= i < 13:
            src = npt_map(npt_in[i - 10].src, I, E)
            if src is None:
                npt_drops += 1
                continue
            q = npt_in[i - 10].copy()
            q.src = src  # checksum-neutral: the transport checksum stays
            emit("nptout", IPv6(raw(q)), 0x86DD)
        elif i == 13:
            q = npt_back.copy()
            q.dst = npt_map(q.dst, E, I)
            emit("nptin", IPv6(raw(q)), 0x86DD)
    assert npt_map("fd01:203:405:1::1234", I, E) == "2001:db8:1:d550::1234"  # RFC 6296's example
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    # By protocol number (ICMP 1, TCP 6, UDP 17), then IPv6 address and port.
    bindings = "\n".join([
        "icmp [%s]:119 %s:1024 sessions=1" % (H6, POOL),
        "tcp [%s]:40000 %s:1024 sessions=1" % (H6, POOL),
        "udp [%s]:5000 %s:1024 sessions=1" % (H6, POOL),
    ])
    # outbound (SYN, UDP, echo), inbound (SYN-ACK, UDP, reply, error),
    # errors, no mapping, not SYN, not under the prefix, BIB entries,
    # sessions, the bindings; NPTv6 out, in, passed, drops.
    write_text(os.path.join(HERE, "expected.txt"),
               [3, 4, 1, 1, 1, 1, 3, 3, bindings, 2, 1, 0, npt_drops])


if __name__ == "__main__":
    main()
