#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "10.0.0.2", "10.0.0.9"


def frames():
    f = []
    u = lambda s, d, n=4, **kw: ipv4(s, d, 17, udp(s, d, 1000, 53, bytes(i & 255 for i in range(n))), **kw)
    f.append(eth_ip(u(A, B)))                                         # padded to 60
    f.append(eth_ip(ipv4(A, B, 6, tcp(A, B, 1234, 80, b"hello"))))
    f.append(eth_ip(ipv4(A, B, 1, icmp(8, 0, b"\0\1\0\1", b"ping"))))  # echo: answered
    f.append(eth_ip(ipv4(A, B, 1, icmp(3, 3, payload=u(B, A)))))      # error: not answered
    f.append(eth_ip(ipv4(A, B, 1, icmp(11, 0, payload=u(B, A)))))     # error: not answered
    f.append(eth_ip(ipv4(A, B, 1, b"\x08\0")))                        # ICMP too short
    f.append(eth_ip(u(A, B, 40, flags_off=0x2000)))                   # first fragment
    f.append(eth_ip(u(A, B, 40, flags_off=0x2003)))                   # later fragment
    f.append(eth_ip(u(A, B, 40, flags_off=0x0003)))                   # last fragment
    f.append(eth_ip(u(A, B, flags_off=0x4000)))                       # DF
    for dst in ("255.255.255.255", "224.0.0.5", "239.1.2.3", "10.0.0.255", "10.1.255.255"):
        f.append(eth_ip(u(A, dst)))
    for src in ("0.1.2.3", "127.0.0.1", "240.0.0.1", "255.255.255.255", "224.1.1.1",
                "10.0.0.255", "126.255.255.255"):
        f.append(eth_ip(u(src, B)))
    # Source routes: LSRR with two hops used, SSRR with none used, a bad pointer,
    # and one after a NOP.
    lsrr = bytes([131, 11, 12, 1, 1, 1, 1, 2, 2, 2, 2, 0])
    ssrr = bytes([137, 7, 4, 3, 3, 3, 3, 0])
    badp = bytes([131, 7, 5, 3, 3, 3, 3, 0])
    nop = bytes([1, 131, 7, 8, 4, 4, 4, 4])
    for o in (lsrr, ssrr, badp, nop):
        f.append(eth_ip(u(A, B, 8, opts=o)))
    f.append(eth_ip(u(A, B, 1400)))                                   # long: quote cut at MTU
    f.append(eth_ip(ipv4(A, B, 17, b"", total_len=20)[:20] + b"\xaa" * 3, pad=False))
    f.append(eth_ip(ipv4(A, B, 47, bytes(30))))                       # GRE
    return f


ERR_TYPES = (3, 4, 5, 11, 12)
ids = [1]


def unicast(a, bad):
    return a != b"\xff" * 4 and (a[0] & 0xF0) != 0xE0 and a not in bad


def valid_source(a, bad):
    return unicast(a, bad) and a[0] not in (0, 127) and (a[0] & 0xF0) != 0xF0


def source_route(ip):
    hl = (ip[0] & 15) * 4
    i = 20
    while i < hl:
        t = ip[i]
        if t == 1:
            i += 1
            continue
        if t == 0:
            return None
        xl = ip[i + 1]
        if xl < 2 or i + xl > hl:
            return None
        ptr = ip[i + 2]
        if t in (131, 137) and ptr >= 4 and ptr % 4 == 0 and ptr <= xl + 1:
            return i
        i += xl
    return None


def icmp_error(p, src, typ, code, mtu=576, pmtu=0, bad=(), fix=True):
    """RFC 792 error about p (nh = 0) as ICMPError builds it, or None."""
    ip = bytes(p.data)
    hl = (ip[0] & 15) * 4
    if ip[9] == 1:
        if hl + 4 > len(ip) or ip[hl] in ERR_TYPES:
            return None
    s, d = ip[12:16], ip[16:20]
    if not unicast(d, bad) or not valid_source(s, bad):
        return None
    if struct.unpack("!H", ip[6:8])[0] & 0x1FFF:
        return None
    ptr = p.anno[17]
    sr = source_route(ip)
    if sr is not None:
        if typ == 5:
            return None
        if typ == 12 and code == 0 and sr <= ptr < sr + ip[sr + 1]:
            sr = None
    opts = b""
    if sr is not None:
        sp = ip[sr + 2]
        hops = [ip[sr + 3 + 4 * k:sr + 7 + 4 * k] for k in range((sp - 4) // 4)]
        opts = bytes([ip[sr], sp - 1, 4]) + b"".join(reversed(hops)) + b"\0"
    qhl = 20 + len(opts)
    xlen = min(mtu - qhl - 8, len(ip))
    rest = b"\0\0\0\0"
    if typ == 12 and code == 0:
        rest = bytes([ptr, 0, 0, 0])
    if typ == 5:
        rest = p.dst_anno
    if typ == 3 and code == 4:
        rest = struct.pack("!HH", 0, pmtu & 0xFFFF)
    msg = icmp(typ, code, rest, ip[:xlen])
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x40 | (qhl // 4), 0, qhl + len(msg),
                                ids[0] & 0xFFFF, 0, 200, 1, 0, ip_aton(src), s) + opts)
    ids[0] += 1
    hdr[10:12] = struct.pack("!H", cksum(bytes(hdr)))
    q = Pkt(bytes(hdr) + msg, BASE_SEC, 0)
    q.fix = fix
    return q


def fix_ip_src(q, addr):
    if q.fix:
        hl = (q.data[0] & 15) * 4
        q.data[12:16] = ip_aton(addr)
        q.data[10:12] = b"\0\0"
        q.data[10:12] = struct.pack("!H", cksum(bytes(q.data[:hl])))
        q.fix = False
    return q


def encap(q):
    q.data = bytearray(mac("00:00:00:00:00:02") + mac("00:00:00:00:00:01") + b"\x08\x00") + q.data
    return q


def with_tos(frame, tos):
    f = bytearray(frame)
    if f[12:14] != b"\x08\x00" or len(f) < 34:
        return bytes(f)
    f[15] = tos
    hl = (f[14] & 15) * 4
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", cksum(bytes(f[14:14 + hl])))
    return bytes(f)


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"),
                       [with_tos(f, 4 * k) for k in range(5) for f in frames()])
    outs = {k: [] for k in ("timeexceeded", "needfrag", "redirect", "paramprob", "port")}
    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        tos = p.data[15]
        p.pull(14)
        p.extra = 0
        if tos == 0:
            q = icmp_error(p.copy(), "18.26.4.24", 11, 0)
            if q:
                outs["timeexceeded"].append(encap(q))
        elif tos == 4:
            q = icmp_error(p.copy(), "18.26.4.24", 3, 4, mtu=100, pmtu=1400)
            if q:
                outs["needfrag"].append(encap(fix_ip_src(q, "9.9.9.9")))
        elif tos == 8:
            r = p.copy()
            r.dst_anno = ip_aton("10.0.0.254")
            q = icmp_error(r, "1.2.3.4", 5, 1)
            if q:
                outs["redirect"].append(encap(q))
        elif tos == 12:
            q = icmp_error(p.copy(), "1.2.3.4", 12, 0, fix=False)
            if q:
                outs["paramprob"].append(encap(fix_ip_src(q, "9.9.9.9")))
        elif tos == 16:
            q = icmp_error(p.copy(), "1.2.3.4", 3, 3, mtu=1500,
                           bad=(ip_aton("10.0.0.255"), ip_aton("10.1.255.255")))
            if q:
                outs["port"].append(encap(q))
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)


main()
