"""A plain-Python model of Click's IPRewriter family (IPRewriter, TCPRewriter,
UDPRewriter) with patterns and mappers, for the make.py generators of the
NAT cases (35 and up). Modelled from Click's iprwpattern, iprewriterbase,
iprwmapping, rripmapper and siphmapper sources; it does not run pronto.

Flows are (saddr bytes, sport, daddr bytes, dport). Only sequential ('#')
and same-port-first (no suffix) allocation are modelled, not random ('?').
"""

import ctypes
import struct

from conflib import be16, upd

RW_DROP = -1


def ip_s(a):
    return ".".join(str(x) for x in a)


def aton(s):
    return bytes(int(x) for x in s.split("."))


def rev(f):
    return (f[2], f[3], f[0], f[1])


class Pattern:
    """SADDR [SPORT] DADDR [DPORT], as Click's IPRewriterPattern parses it
    (4-word form only here)."""

    def __init__(self, text):
        w = text.split()
        assert len(w) == 4, text
        self.sequential, self.same_first, self.vtop = False, True, 0
        self.saddr = self.daddr = None
        self.sport = self.dport = 0
        self.next = 0
        sa, sp, da, dp = w
        if sa != "-":
            if "-" in sa.rstrip("#?") or sa[-1] in "#?":
                raise ValueError("address ranges not modelled")
            self.saddr = aton(sa)
        if sp != "-":
            core = sp
            if core.endswith("#"):
                self.sequential, self.same_first, core = True, False, core[:-1]
            elif core.endswith("?"):
                raise ValueError("random not modelled")
            lo, _, hi = core.partition("-")
            self.sport = int(lo)
            self.vtop = int(hi) - int(lo) if hi else 0
        if da != "-":
            self.daddr = aton(da)
        if dp != "-":
            self.dport = int(dp)

    def rewrite(self, flow, reply_map):
        sa, sp, da, dp = flow
        rf = [self.saddr or sa, self.sport or sp, self.daddr or da, self.dport or dp]
        if self.vtop:
            base = self.sport
            look = list(rev(tuple(rf)))
            found = None
            if self.same_first and ((sp - base) & 0xFFFFFFFF) <= self.vtop:
                look[3] = sp
                if tuple(look) not in reply_map:
                    found = sp - base
            if found is None:
                assert self.sequential, "random allocation not modelled"
                val = 0 if self.next > self.vtop else self.next
                for _ in range(self.vtop + 1):
                    look[3] = base + val
                    if tuple(look) not in reply_map:
                        found = val
                        break
                    val = 0 if val == self.vtop else val + 1
                if found is None:
                    return None
            rf[1] = base + found
            self.next = found + 1
        return tuple(rf)


class Spec:
    """One input specification (or one pattern of a mapper)."""

    def __init__(self, kind, fo=0, ro=0, pattern=None, mapper=None):
        self.kind, self.fo, self.ro = kind, fo, ro
        self.pattern, self.mapper = pattern, mapper
        self.count = 0
        self.failures = 0

    def rewrite(self, flow, reply_map):
        """(result, rewritten flow, foutput, routput): result 'add', an
        output number (pass), or RW_DROP."""
        if self.kind == "pass":
            return self.fo, None, 0, 0
        if self.kind == "drop":
            return RW_DROP, None, 0, 0
        if self.kind == "keep":
            return "add", flow, self.fo, self.ro
        if self.kind == "pattern":
            rf = self.pattern.rewrite(flow, reply_map)
            if rf is None:
                self.failures += 1
                return RW_DROP, None, 0, 0
            return "add", rf, self.fo, self.ro
        r = self.mapper.rewrite(flow, reply_map)
        if r[0] == RW_DROP:
            self.failures += 1
        return r


class RoundRobin:
    def __init__(self, specs):
        self.specs, self.last = specs, 0

    def rewrite(self, flow, reply_map):
        for _ in range(len(self.specs)):
            s = self.specs[self.last]
            self.last = (self.last + 1) % len(self.specs)
            r = s.rewrite(flow, reply_map)
            if r[0] != RW_DROP or s.kind == "drop":
                return r
        return RW_DROP, None, 0, 0


def glibc_random(seed, n):
    libc = ctypes.CDLL(None)
    libc.random.restype = ctypes.c_long
    libc.srandom(ctypes.c_uint(seed))
    return [libc.random() for _ in range(n)]


class SourceIPHash:
    """SourceIPHashMapper: a consistent-hash tree of NNODES random keys per
    server ID (glibc random() after srandom(SEED)), laid out as Click's
    jvtree; a key finds the smallest tree key above it on its search path,
    or the tree's first element. The server's index is its rank among the
    configured IDs in ascending ID order, and indexes the patterns in
    configuration order."""

    def __init__(self, nnodes, seed, specs_ids):
        self.specs = [s for s, _ in specs_ids]
        ids = [i for _, i in specs_ids]
        maxs = max(ids) + 1
        rnd = iter(glibc_random(seed, maxs * nnodes))
        nodes = []
        index = -1
        for i in range(maxs):
            inc = False
            for _ in range(nnodes):
                r = next(rnd)
                if i in ids:
                    if not inc:
                        inc = True
                        index += 1
                    nodes.append((r, i, index))
        arr = sorted(nodes, key=lambda x: x[0])
        sz = len(arr)
        n = 1 << sz.bit_length()
        h = n - 1
        f = 2 * ((sz + 1) // 2) - 2 * ((h - sz) // 2) + 1
        tree = [None] * sz
        d, s, to = n, n >> 1, 0
        while s > 0 and to < sz:
            x = s
            while x < n and to < sz:
                frm = x if x < f else (x + f - 1) // 2
                tree[to] = arr[frm - 1]
                to += 1
                x += d
            d, s = s, s >> 1
        self.tree = tree

    def search(self, k):
        i, ret = 0, None
        while i < len(self.tree):
            c = self.tree[i]
            if k == c[0]:
                return c
            if k > c[0]:
                i = 2 * i + 2
            else:
                ret = c
                i = 2 * i + 1
        return ret if ret is not None else self.tree[0]

    def rewrite(self, flow, reply_map):
        tmp = struct.unpack("<I", flow[0])[0]
        t2 = tmp & 0xFF
        tmp = (tmp * ((t2 << 24) | 1)) & 0xFFFFFFFF
        tmp %= 0x7FFFFFFF
        v = self.search(tmp)[2]
        return self.specs[v].rewrite(flow, reply_map)


class Rewriter:
    """IPRewriter ('ip': TCP and UDP, one table each), TCPRewriter ('tcp':
    TCP only) or UDPRewriter ('udp': TCP, UDP and DCCP in one table)."""

    def __init__(self, flavor, specs):
        self.flavor, self.specs = flavor, specs
        self.maps = {}
        self.nflows = 0

    def table(self, proto):
        if self.flavor == "ip":
            return self.maps.setdefault(proto, {})
        return self.maps.setdefault(0, {})

    def handles(self, proto):
        return {"ip": (6, 17), "tcp": (6,), "udp": (6, 17, 33)}[self.flavor].__contains__(proto)

    def process(self, port, q, ip=14):
        """Rewrites packet q (Pkt; IP header at offset ip) in place; returns
        the output or None (dropped)."""
        d = q.data
        hl = (d[ip] & 15) * 4
        proto = d[ip + 9]
        first = be16(d, ip + 6) & 0x1FFF == 0
        tlen = be16(d, ip + 2) - hl
        spec = self.specs[port]
        if not self.handles(proto) or not first or tlen < 8:
            return spec.fo if spec.kind == "pass" else None
        t = ip + hl
        flow = (bytes(d[ip + 12:ip + 16]), be16(d, t), bytes(d[ip + 16:ip + 20]), be16(d, t + 2))
        m = self.table(proto)
        hit = m.get(flow)
        if hit is None:
            res, rf, fo, ro = spec.rewrite(flow, m)
            if res != "add":
                return res if res != RW_DROP else None
            fl = {"orig": flow, "new": rf, "fo": fo, "ro": ro, "input": port}
            m[flow] = (fl, 0)
            m[rev(rf)] = (fl, 1)
            spec.count += 1
            self.nflows += 1
            hit = (fl, 0)
        fl, reply = hit
        o, n = fl["orig"], fl["new"]
        ow = list(struct.unpack("!HHHH", o[0] + o[2])) + [o[1], o[3]]
        nw = list(struct.unpack("!HHHH", n[0] + n[2])) + [n[1], n[3]]
        ipd = 0
        for a, b in zip(ow[:4], nw[:4]):
            ipd = upd(ipd, a, b)
        l4d = ipd
        for a, b in zip(ow[4:], nw[4:]):
            l4d = upd(l4d, a, b)
        if reply:
            d[ip + 12:ip + 16], d[ip + 16:ip + 20] = o[2], o[0]
            d[t:t + 4] = struct.pack("!HH", o[3], o[1])
        else:
            d[ip + 12:ip + 16], d[ip + 16:ip + 20] = n[0], n[2]
            d[t:t + 4] = struct.pack("!HH", n[1], n[3])

        def apply(off, delta):
            if delta:
                c = upd(be16(d, off), 0, delta if reply else ~delta & 0xFFFF)
                d[off:off + 2] = struct.pack("!H", c)

        apply(ip + 10, ipd)
        if proto == 6 and tlen >= 18:
            apply(t + 16, l4d)
        elif proto == 17 and be16(d, t + 6):
            apply(t + 6, l4d)
        return fl["ro"] if reply else fl["fo"]
