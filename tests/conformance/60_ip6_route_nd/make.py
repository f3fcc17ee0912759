#!/usr/bin/python3
"""Generates config.click's input.pcap and the expected outputs of this case
with scapy (run with /usr/bin/python3, which has it), independently of
pronto: each element is modelled from Click's source (LookupIP6Route,
IP6NDSolicitor, IP6NDAdvertiser) and RFC 4861, where pronto's documentation
says it differs from Click (validity checks, the Override flag, answers to
duplicate address detection)."""
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import Pkt, write_input, write_todump, write_text  # noqa: E402
from scapy.all import (Ether, IPv6, UDP, Raw, ICMPv6ND_NS, ICMPv6ND_NA,  # noqa: E402
                       ICMPv6NDOptSrcLLAddr, ICMPv6NDOptDstLLAddr, in6_getnsma,
                       in6_getnsmac)
from socket import inet_pton, AF_INET6  # noqa: E402

ROUTER0 = "02:00:00:00:01:00"   # nds0 and the advertiser's own address
ROUTER1 = "02:00:00:00:01:01"   # nds1
PEER = "02:00:00:00:00:99"      # the hosts sending data
STAMP = 1600000000


def a16(s):
    return inet_pton(AF_INET6, s)


def fmt(s):
    """RFC 5952 text, as pronto and Click print addresses."""
    import ipaddress
    return str(ipaddress.IPv6Address(a16(s)))


# ----------------------------------------------------------------- trace

def data(dst, n):
    return bytes(Ether(dst=ROUTER0, src=PEER) /
                 IPv6(src="2001:db8:ff::1", dst=dst, hlim=64) /
                 UDP(sport=1000 + n, dport=9) / Raw(bytes(range(n))))


def na(src, target, mac, flags="SO", hlim=255, opt=True, bad_sum=False, dst="fe80::100"):
    m = ICMPv6ND_NA(tgt=target, R=0, S=int("S" in flags), O=int("O" in flags))
    if opt:
        m = m / ICMPv6NDOptDstLLAddr(lladdr=mac)
    f = Ether(bytes(Ether(dst=ROUTER0, src=mac) / IPv6(src=src, dst=dst, hlim=hlim) / m))
    if bad_sum:
        f[ICMPv6ND_NA].cksum ^= 0x0101
    return bytes(f)


def icmp6_sum(src, dst, msg):
    """The ICMPv6 checksum of `msg` (its checksum field zero) from scratch."""
    data = a16(src) + a16(dst) + len(msg).to_bytes(4, "big") + bytes([0, 0, 0, 58]) + msg
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ns(src, target, mac, hlim=255, opt=True, zero_opt=False):
    dst = fmt_raw(in6_getnsma(a16(target)))
    m = ICMPv6ND_NS(tgt=target)
    if opt:
        m = m / ICMPv6NDOptSrcLLAddr(lladdr=mac)
    b = bytearray(bytes(Ether(dst=in6_getnsmac(a16(dst)), src=mac) /
                        IPv6(src=src, dst=dst, hlim=hlim) / m))
    if zero_opt:
        # An option of length 0 (RFC 4861: discard), checksum kept right.
        b[14 + 40 + 24 + 1] = 0
        b[56:58] = b"\0\0"
        b[56:58] = icmp6_sum(src, dst, bytes(b[54:])).to_bytes(2, "big")
    return bytes(b)


def fmt_raw(b):
    import ipaddress
    return str(ipaddress.IPv6Address(b))


FRAMES = [
    ("data", data("2001:db8::9", 10)),          # /32 via fe80::1 -> nds0 (solicit, hold)
    ("data", data("2001:db9::9", 11)),          # default via fe80::3 -> nds0 (solicit, hold)
    ("data", data("2001:db8:1::9", 12)),        # /48 connected -> nds1 (solicit, hold)
    ("data", data("2001:db8:1:2::9", 13)),      # /64 via fe80::2 -> nds1 (solicit, hold)
    ("data", data("2001:db8:1:2::5", 14)),      # /128 -> output 2
    ("data", data("2001:db8:1::7", 15)),        # /48 -> nds1 (solicit, hold)
    ("data", data("2001:db8:1::7", 16)),        # again: replaces the held one
    ("data", data("3000::1", 17)),              # no annotation (::): default, replaces
    ("na", na("fe80::1", "fe80::1", "02:00:00:00:00:f1")),
    ("na", na("fe80::3", "fe80::3", "02:00:00:00:00:f3", hlim=64)),   # bad: hop limit
    ("na", na("fe80::3", "fe80::3", "02:00:00:00:00:f3")),
    ("na", na("2001:db8:1::9", "2001:db8:1::9", "02:00:00:00:00:19", dst="2001:db8:1::100")),
    ("na", na("fe80::2", "fe80::2", "02:00:00:00:00:f2", bad_sum=True)),  # bad: checksum
    ("na", na("fe80::2", "fe80::2", "02:00:00:00:00:f2", opt=False)),     # valid, no address
    ("na", na("2001:db8:1::55", "2001:db8:1::55", "02:00:00:00:00:55")),  # nobody asked
    ("na", na("fe80::2", "fe80::2", "02:00:00:00:00:f2", flags="S", dst="ff02::1")),  # bad: S to multicast
    ("data", data("2001:db8::9", 18)),          # known now: straight out
    ("data", data("2001:db8:1:2::9", 19)),      # fe80::2 still unknown: replaces, solicits
    ("ns", ns("2001:db8:1::9", "2001:db8:1::100", "02:00:00:00:00:19")),   # own address
    ("ns", ns("2001:db8:1::9", "2001:db8:7::1", "02:00:00:00:00:19")),     # proxied /48
    ("ns", ns("::", "fe80::100", "02:00:00:00:00:42", opt=False)),         # DAD
    ("ns", ns("2001:db8:1::9", "2001:db8:9::1", "02:00:00:00:00:19")),     # unknown target
    ("ns", ns("2001:db8:1::9", "fe80::100", "02:00:00:00:00:19", hlim=254)),  # bad: hop limit
    ("ns", ns("2001:db8:1::9", "fe80::100", "02:00:00:00:00:19", zero_opt=True)),  # bad: option
    ("ns", ns("::", "fe80::100", "02:00:00:00:00:42")),                    # bad: DAD with option
]

# Destinations the config's annotation setter knows (GetIP6Address's job):
# every data destination but 3000::1, which keeps an unset annotation.
KNOWN = ["2001:db8::9", "2001:db9::9", "2001:db8:1::9", "2001:db8:1:2::9",
         "2001:db8:1:2::5", "2001:db8:1::7"]

# ----------------------------------------------------------------- model

ROUTES = [("2001:db8::", 32, "fe80::1", 0), ("2001:db8:1::", 48, None, 1),
          ("2001:db8:1:2::", 64, "fe80::2", 1), ("2001:db8:1:2::5", 128, None, 2),
          ("::", 0, "fe80::3", 0)]


def lpm(routes, addr):
    x = int.from_bytes(addr, "big")
    best = None
    for p, l, gw, out in routes:
        m = ((1 << 128) - 1) ^ ((1 << (128 - l)) - 1) if l else 0
        if x & m == int.from_bytes(a16(p), "big") and (best is None or l > best[1]):
            best = (p, l, gw, out)
    return best


def cksum_ok(frame):
    b = bytes(frame)
    f = Ether(b)
    layer = f[ICMPv6ND_NA] if ICMPv6ND_NA in f else f[ICMPv6ND_NS]
    got = layer.cksum
    layer.cksum = None
    return Ether(bytes(f))[type(layer)].cksum == got


def nd_valid(b, kind):
    """RFC 4861 7.1.1 / 7.1.2, as pronto checks."""
    f = Ether(b)
    if IPv6 not in f or f[IPv6].nh != 58:
        return None
    layer = ICMPv6ND_NA if kind == 136 else ICMPv6ND_NS
    if layer not in f:
        return None
    ip, m = f[IPv6], f[layer]
    if ip.hlim != 255 or m.code != 0 or not cksum_ok(b):
        return None
    if ip.plen < 24:
        return None
    opts = bytes(m.payload)
    i, ll = 0, None
    while i < len(opts):
        if opts[i + 1] == 0 or i + opts[i + 1] * 8 > len(opts):
            return None
        want = 2 if kind == 136 else 1
        if opts[i] == want and ll is None:
            ll = opts[i + 2:i + 8]
        i += opts[i + 1] * 8
    src, dst = a16(ip.src), a16(ip.dst)
    tgt = a16(m.tgt)
    if tgt[0] == 0xff:
        return None
    if kind == 135 and src == bytes(16):
        if dst != in6_getnsma(tgt) or ll is not None:
            return None
    if kind == 136 and dst[0] == 0xff and m.S:
        return None
    return dict(src=src, dst=dst, tgt=tgt, ll=ll, esrc=b[6:12])


class Solicitor:
    def __init__(self, ip, mac, two):
        self.ip, self.mac = a16(ip), bytes.fromhex(mac.replace(":", ""))
        self.out, self.sol = [], ([] if two else None)
        self.table = {}   # addr -> [mac, ok, waiting, seq]
        self.seq = self.queries = self.killed = self.resp = self.bad = self.drops = 0

    def solicit(self, want):
        dst = in6_getnsma(want)
        f = (Ether(dst=in6_getnsmac(dst), src=self.mac.hex(":")) /
             IPv6(src=fmt_raw(self.ip), dst=fmt_raw(dst), hlim=255) /
             ICMPv6ND_NS(tgt=fmt_raw(want)) / ICMPv6NDOptSrcLLAddr(lladdr=self.mac.hex(":")))
        self.queries += 1
        (self.sol if self.sol is not None else self.out).append(Pkt(bytes(f), 0, 0))

    def ip6(self, p, hop):
        if hop[0] == 0xff:
            self.send(p, bytes([0x33, 0x33]) + hop[12:])
            return
        e = self.table.get(hop)
        if e is None:
            self.seq += 1
            e = self.table[hop] = [bytes(6), False, None, self.seq]
        if e[1]:
            self.send(p, e[0])
        else:
            if e[2] is not None:
                self.killed += 1
                self.drops += 1
            e[2] = p
            self.solicit(hop)

    def send(self, p, dmac):
        q = p.copy()
        q.data = bytearray(dmac + self.mac + b"\x86\xdd") + q.data
        self.out.append(q)

    def advert(self, b):
        m = nd_valid(b, 136)
        if m is None:
            self.bad += 1
            return
        self.resp += 1
        if m["ll"] is None or m["tgt"] not in self.table:
            return
        e = self.table[m["tgt"]]
        e[0], e[1] = m["ll"], True
        if e[2] is not None:
            p, e[2] = e[2], None
            self.ip6(p, m["tgt"])

    def table_text(self):
        rows = sorted(self.table.items(), key=lambda kv: ((kv[0][0] + kv[0][15]) % 256, -kv[1][3]))
        return "".join("%s %d %s\n" % (fmt_raw(k), 1 if v[1] else 0,
                                       "-".join("%02X" % x for x in v[0])) for k, v in rows)

    def length(self):
        return sum(1 for v in self.table.values() if v[2] is not None)


class Advertiser:
    ENTRIES = [("fe80::100", 128, ROUTER0), ("2001:db8:1::100", 128, ROUTER0),
               ("2001:db8:7::", 48, "02:00:00:00:01:07")]

    def __init__(self):
        self.out = []
        self.resp = self.bad = self.drops = 0

    def ns(self, b):
        m = nd_valid(b, 135)
        if m is None:
            self.bad += 1
            return
        best = lpm([(p, l, mac, 0) for p, l, mac in self.ENTRIES], m["tgt"])
        if best is None:
            self.drops += 1
            return
        mac, host = best[2], best[1] == 128
        tgt = fmt_raw(m["tgt"])
        if m["src"] == bytes(16):
            edst, dst, s = "33:33:00:00:00:01", "ff02::1", 0
        else:
            edst, dst, s = m["esrc"].hex(":"), fmt_raw(m["src"]), 1
        f = (Ether(dst=edst, src=mac) / IPv6(src=tgt, dst=dst, hlim=255) /
             ICMPv6ND_NA(R=1, S=s, O=int(host), tgt=tgt) / ICMPv6NDOptDstLLAddr(lladdr=mac))
        self.resp += 1
        self.out.append(Pkt(bytes(f), STAMP, 0))


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), [f for _, f in FRAMES])
    nds0 = Solicitor("fe80::100", ROUTER0, True)
    nds1 = Solicitor("2001:db8:1::100", ROUTER1, False)
    adv = Advertiser()
    host, rt_drops, rt2_drops = [], 0, 0
    rt2 = [("2001:db8::", 32, None, 0)]
    for (kind, _), p in zip(FRAMES, pkts):
        if kind == "ns":
            adv.ns(bytes(p.data))
        elif kind == "na":
            nds0.advert(bytes(p.data))
            nds1.advert(bytes(p.data))
        else:
            q = p.copy()
            q.data = q.data[14:]
            dst = bytes(q.data[24:40])
            anno = dst if fmt_raw(dst) in [fmt(k) for k in KNOWN] else bytes(16)
            if lpm(rt2, anno) is None:
                rt2_drops += 1
            r = lpm(ROUTES, anno)
            if r is None:
                rt_drops += 1
                continue
            hop = a16(r[2]) if r[2] else anno
            if r[3] == 0:
                nds0.ip6(q, hop)
            elif r[3] == 1:
                nds1.ip6(q, hop)
            else:
                q.data = bytearray(bytes.fromhex("020000000005020000000102") + b"\x86\xdd") + q.data
                host.append(q)
    for p in adv.out:
        p.sec, p.nsec = STAMP, 0
    for p in nds0.sol:
        p.sec, p.nsec = STAMP, 0
    write_todump(os.path.join(HERE, "expected_out0.pcap"), nds0.out)
    write_todump(os.path.join(HERE, "expected_sol0.pcap"), nds0.sol)
    # nds1 has one output: its solicitations and packets share it; the
    # config sorts them by type again (so that the solicitations can get a
    # timestamp).
    sol1 = [p for p in nds1.out if p.data[20] == 58 and p.data[54] == 135]
    for p in sol1:
        p.sec, p.nsec = STAMP, 0
    write_todump(os.path.join(HERE, "expected_sol1.pcap"), sol1)
    write_todump(os.path.join(HERE, "expected_out1.pcap"), [p for p in nds1.out if p not in sol1])
    write_todump(os.path.join(HERE, "expected_host.pcap"), host)
    write_todump(os.path.join(HERE, "expected_adv.pcap"), adv.out)

    table = "# Active routes\n" + "".join(
        "%s/%d\t%s\t%d\n" % (fmt(p), l, fmt(gw) if gw else "::", out) for p, l, gw, out in ROUTES)
    after = [r for r in ROUTES if r[0] not in ("2001:db8:1:2::5", "2001:db8::")]
    # `add` replaces 2001:db8:1::/48 in place (its slot is the first free
    # one); the two removed routes' slots stay free.
    after_table = "# Active routes\n" + "".join(
        "%s/%d\t%s\t%d\n" % (fmt(p), l, fmt(gw) if gw else "::", out)
        for p, l, gw, out in [("2001:db8:1::", 48, "fe80::9", 0)] + after[1:])
    lines = [
        table.rstrip("\n"),
        "1 fe80::2",                  # lookup 2001:db8:1:2::1
        "2",                          # lookup 2001:db8:1:2::5
        "0 fe80::3",                  # lookup 4000::1
        rt_drops, rt2_drops,
        nds0.table_text().rstrip("\n"),
        "%d packets killed\n%d ND Solicitation Message sent" % (nds0.killed, nds0.queries),
        nds0.resp, nds0.bad, nds0.drops, nds0.length(),
        nds1.table_text().rstrip("\n"),
        "%d packets killed\n%d ND Solicitation Message sent" % (nds1.killed, nds1.queries),
        nds1.resp, nds1.bad, nds1.drops, nds1.length(),
        adv.resp, adv.bad, adv.drops,
        after_table.rstrip("\n"),
        "1 fe80::2",                  # lookup 2001:db8:1:2::5 after the removals
        "0 fe80::9",                  # lookup 2001:db8:1::1
    ]
    write_text(os.path.join(HERE, "expected.txt"), lines)

    # The annotation setter: one Classifier pattern per known destination
    # (IPv6 destination at offset 24 of the stripped packet), then Paint
    # elements writing its nonzero bytes into DST_IP6_ANNO (bytes 0-15).
    pats, chains = [], []
    for i, d in enumerate(KNOWN):
        b = a16(d)
        pats.append("24/%s" % b.hex())
        sets = " -> ".join("Paint(%d, %d)" % (b[k], k) for k in range(16) if b[k])
        chains.append("dsts[%d] -> %s -> t6;" % (i, sets))
    chains.append("dsts[%d] -> t6;  // 3000::1: annotation left unset (::)" % len(KNOWN))
    with open(os.path.join(HERE, "config.click"), "w") as fh:
        fh.write(CONFIG.replace("@PATTERNS@", ", ".join(pats) + ", -")
                 .replace("@CHAINS@", "\n".join(chains)))


CONFIG = """// LookupIP6Route over three outputs (gateway routes /32, /64 and ::/0,
// connected /48, host /128; an unset annotation looks up ::) feeding two
// IP6NDSolicitors (nds0: two outputs, solicitations on output 1; nds1: one
// output) that hold one packet per unresolved next hop, solicit the
// solicited-node address for every packet, and release the held packet when
// a valid neighbor advertisement with a target link-layer address arrives
// (bad ones: hop limit, checksum, solicited to multicast; counted), and an
// IP6NDAdvertiser answering solicitations for its own addresses (Override
// set), a proxied /48 (Override clear), duplicate address detection (to
// ff02::1), and dropping unknown targets and invalid solicitations. rt2
// (no default route) drops and counts. Handlers: table, lookup, drops, add,
// remove, ctrl; stats, table, responses, bad, drops, length. GetIP6Address
// is stood in for by a Classifier on the destination and Paint elements
// writing the DST_IP6 annotation. Generated by make.py.
src :: FromDump(input.pcap, STOP true);
c :: Classifier(12/86dd 20/3a 54/87, 12/86dd 20/3a 54/88, 12/86dd, -);
src -> c;
adv :: IP6NDAdvertiser(fe80::100 2001:db8:1::100 02:00:00:00:01:00, 2001:db8:7::/48 02:00:00:00:01:07);
c[0] -> adv -> SetTimestamp(1600000000) -> ToDump(output_adv.pcap);
nds0 :: IP6NDSolicitor(fe80::100, 02:00:00:00:01:00);
nds1 :: IP6NDSolicitor(2001:db8:1::100, 02:00:00:00:01:01);
c[1] -> na :: Tee(2);
na[0] -> [1]nds0; na[1] -> [1]nds1;
c[3] -> Discard;
rt :: LookupIP6Route(2001:db8::/32 fe80::1 0, 2001:db8:1::/48 1, 2001:db8:1:2::/64 fe80::2 1,
                     2001:db8:1:2::5 2, ::/0 fe80::3 0);
rt2 :: LookupIP6Route(2001:db8::/32 0);
c[2] -> Strip(14) -> dsts :: Classifier(@PATTERNS@);
t6 :: Tee(2);
@CHAINS@
t6[0] -> rt;
t6[1] -> rt2 -> Discard;
rt[0] -> nds0;
rt[1] -> nds1;
rt[2] -> EtherEncap(0x86dd, 02:00:00:00:01:02, 02:00:00:00:00:05) -> ToDump(output_host.pcap);
nds0[0] -> ToDump(output_out0.pcap);
nds0[1] -> SetTimestamp(1600000000) -> ToDump(output_sol0.pcap);
nds1 -> s1 :: Classifier(20/3a 54/87, -);
s1[0] -> SetTimestamp(1600000000) -> ToDump(output_sol1.pcap);
s1[1] -> ToDump(output_out1.pcap);
DriverManager(wait,
  print rt.table, print rt.lookup 2001:db8:1:2::1, print rt.lookup 2001:db8:1:2::5,
  print rt.lookup 4000::1, print rt.drops, print rt2.drops,
  print nds0.table, print nds0.stats, print nds0.responses, print nds0.bad, print nds0.drops,
  print nds0.length,
  print nds1.table, print nds1.stats, print nds1.responses, print nds1.bad, print nds1.drops,
  print nds1.length,
  print adv.responses, print adv.bad, print adv.drops,
  // errors change nothing: output out of range, bad command
  write rt.add 2001:db8:5::/48 3, write rt.ctrl set ::/0 1,
  write rt.add 2001:db8:1::/48 fe80::9 0, write rt.remove 2001:db8:1:2::5,
  write rt.ctrl remove 2001:db8::/32,
  print rt.table, print rt.lookup 2001:db8:1:2::5, print rt.lookup 2001:db8:1::1);
"""

main()
