#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

Models Click's IPRouteTable handlers (add, set, remove, ctrl with rollback,
lookup, table) over RadixIPLookup, DirectIPLookup, LinearIPLookup and
StaticIPLookup, including the order in which each class's `table` lists its
routes: RadixIPLookup by storage slot (freed slots reused last-freed first),
DirectIPLookup by prefix-hash bucket (newest first in a bucket, the default
route last), LinearIPLookup by slot (first free slot reused).
"""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

NOUT = 3
DSTS = ["10.5.5.5", "10.1.9.9", "10.1.2.3", "10.1.2.200", "192.168.3.3", "192.168.1.7",
        "8.8.8.8", "172.16.5.5", "10.9.1.1", "11.0.0.1"]
ROUTES = ["10.0.0.0/8 0", "10.1.0.0/16 10.0.0.1 1", "10.1.2.0/24 2",
          "10.1.2.128/25 10.0.0.2 0", "192.168.0.0/16 1",
          "192.168.1.7/32 10.0.0.3 2", "0.0.0.0/0 10.0.0.254 1"]


def frames():
    return [eth_ip(ipv4("10.0.0.99", d, 17, udp("10.0.0.99", d, 1000 + i, 53, bytes([i]) * 8),
                         ident=i))
            for i, d in enumerate(DSTS)]


# ---------------------------------------------------------------- routes

def addr(s, partial):
    parts = s.split(".")
    if not (1 <= len(parts) <= 4) or (len(parts) != 4 and not partial):
        return None
    if not all(p.isdigit() and int(p) < 256 for p in parts):
        return None
    parts += ["0"] * (4 - len(parts))
    return struct.unpack("!I", bytes(int(p) for p in parts))[0]


def plen_mask(n):
    return (0xFFFFFFFF << (32 - n)) & 0xFFFFFFFF if n else 0


def parse_route(text, remove):
    """(addr, plen, gw, port) or None; port -1 when left out of a removal."""
    w = text.split()
    if not w:
        return None
    p = w.pop(0)
    if "/" in p:
        a, l = p.split("/", 1)
        a = addr(a, True)
        if a is None or not l.isdigit() or int(l) > 32:
            return None
        n = int(l)
    else:
        a, n = addr(p, False), 32
        if a is None:
            return None
    a &= plen_mask(n)
    gw, port = 0, None
    if w and w[0] == "-":
        w.pop(0)
    elif w and addr(w[0], False) is not None:
        gw = addr(w.pop(0), False)
    if w:
        try:
            port = int(w.pop(0))
        except ValueError:
            return None
    elif remove:
        port = -1
    if port is None or w:
        return None
    return (a, n, gw, port)


def ipstr(a):
    return "%d.%d.%d.%d" % tuple(struct.pack("!I", a))


def unparse(r, tabs):
    a, n, gw, port = r
    sep = "\t" if tabs else " "
    s = "%s/%d%s" % (ipstr(a), n, sep)
    if tabs and len(s) < 17:
        s += "\t"
    l = len(s)
    s += (ipstr(gw) if gw else "-") + sep
    if tabs and len(s) < l + 9:
        s += "\t"
    return s + str(port)


def prefix_hash(prefix, n):
    M = 0xFFFFFFFF
    h = prefix ^ (n << 5) ^ (((prefix >> (n >> 2)) - n) & M)
    h ^= (h >> 23) ^ (((h >> 15) * n) & M) ^ (((prefix >> 17) * 53) & M)
    h = (h - ((prefix >> 3) ^ (((h >> (n & 31)) * 7) & M) ^ (((h >> 11) * 103) & M))) & M
    return (h ^ (h >> 17)) & 0xFFFF


class Table:
    """kind: 'radix', 'direct', 'linear' (storage order for `table`)."""

    def __init__(self, kind, routes, dynamic=True):
        self.kind, self.dynamic = kind, dynamic
        self.flush()
        for r in routes:
            self.add(parse_route(r, False), False)

    def flush(self):
        self.slots, self.free, self.age, self.clock = [], [], {}, 1

    def find(self, a, n):
        for i, r in enumerate(self.slots):
            if r and r[0] == a and r[1] == n:
                return i
        return None

    def alloc(self, r):
        if self.kind == "radix" and self.free:
            i = self.free.pop()
        elif self.kind != "radix" and None in self.slots:
            i = self.slots.index(None)
        else:
            i = len(self.slots)
            self.slots.append(None)
        self.slots[i] = r
        self.age[(r[0], r[1])] = 0 if r[1] == 0 else self.clock
        self.clock += 1

    def release(self, i):
        self.slots[i] = None
        self.free.append(i)

    def add(self, r, set_):
        """Returns (errno, old route or None)."""
        i = self.find(r[0], r[1])
        if i is not None:
            old = self.slots[i]
            if not set_:
                return -17, old
            if self.kind == "radix":
                self.alloc(r)
                self.release(i)
            else:
                self.slots[i] = r
            return 0, old
        self.alloc(r)
        return 0, None

    def remove(self, r):
        i = self.find(r[0], r[1])
        if i is None:
            return -2, None
        old = self.slots[i]
        if r[3] >= 0 and (old[2], old[3]) != (r[2], r[3]):
            return -2, None
        self.release(i)
        return 0, old

    def lookup(self, a):
        best = None
        for r in self.slots:
            if r and a & plen_mask(r[1]) == r[0] and (best is None or r[1] > best[1]):
                best = r
        return best

    def dump(self):
        rs = [r for r in self.slots if r]
        if self.kind == "direct":
            rs.sort(key=lambda r: (prefix_hash(r[0], r[1]), -self.age[(r[0], r[1])]))
        return "".join(unparse(r, True) + "\n" for r in rs)

    # handlers; each returns an error text or None
    def command(self, cmd, text, log=None):
        r = parse_route(text, cmd == "remove")
        if r is None:
            return "expected 'ADDR/MASK [GATEWAY%s'" % (" OUTPUT]" if cmd == "remove" else "] OUTPUT")
        if r[3] < (-1 if cmd == "remove" else 0) or r[3] >= NOUT:
            return "bad OUTPUT"
        if cmd == "remove":
            e, old = self.remove(r)
        else:
            e, old = self.add(r, cmd == "set")
        if e == 0 and log is not None:
            log.append((cmd, r, old))
        if e == -17:
            return "conflict with existing route '%s'" % unparse(old, False)
        if e == -2:
            return "route '%s' not found" % unparse(r, False)
        return None

    def ctrl(self, text):
        log, err = [], None
        for line in text.split("\n"):
            w = line.split(None, 1)
            if not w:
                continue
            if w[0] not in ("add", "set", "remove"):
                err = "bad command '%s'" % w[0]
                break
            err = self.command(w[0], w[1] if len(w) > 1 else "", log)
            if err:
                break
        if err:
            for cmd, r, old in reversed(log):
                if cmd == "remove":
                    self.add(old, False)
                elif old is not None:
                    self.add(old, True)
                else:
                    self.remove(r)
        return err

    def write(self, h, value):
        if not self.dynamic and h != "lookup":
            return "no handler"
        if h == "ctrl":
            return self.ctrl(value)
        if h == "flush":
            self.flush()
            return None
        return self.command(h, value)

    def read_lookup(self, text):
        a = addr(text.strip(), False)
        if a is None:
            return None
        r = self.lookup(a)
        if r is None:
            return "-1"
        return "%d %s" % (r[3], ipstr(r[2])) if r[2] else str(r[3])


# ---------------------------------------------------------------- the run

def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    T = {"r": Table("radix", ROUTES), "d": Table("direct", ROUTES),
         "l": Table("linear", ROUTES), "st": Table("linear", ROUTES, dynamic=False)}
    outs = {(e, k): [] for e in T for k in range(NOUT)}
    out = []

    def route_trace():
        for p in pkts:
            for e in ("r", "d", "l", "st"):
                dst = bytes(p.data[30:34])
                r = T[e].lookup(struct.unpack("!I", dst)[0])
                if r is None:
                    continue
                q = p.copy()
                q.data[0:4] = struct.pack("!I", r[2]) if r[2] else dst
                outs[(e, r[3])].append(q)

    def table(*es):
        for e in es:
            out.append(T[e].dump() or "\n")

    def lookup(e, a):
        v = T[e].read_lookup(a)
        if v is not None:
            out.append(v + "\n")

    def w(e, h, v=""):
        T[e].write(h, v)

    route_trace()
    table("r", "d", "l", "st")
    lookup("r", "10.1.2.200"); lookup("d", "10.1.2.3"); lookup("l", "8.8.8.8")
    lookup("st", "192.168.1.7")
    out.append("r %s d %s\n" % (T["r"].read_lookup("10.5.5.5"), T["d"].read_lookup("10.1.9.9")))
    lookup("r", "1.2.3"); lookup("l", "")
    for e in "rdl":
        w(e, "add", "10.1.0.0/16 2")
    for e in "rdl":
        w(e, "remove", "10.9.0.0/16")
    w("r", "remove", "10.1.0.0/16 10.0.0.9 1"); w("d", "remove", "10.1.0.0/16 - 1")
    w("l", "remove", "10.1.0.0/16 10.0.0.1 2")
    w("r", "add", "10.9.0.0/16 3"); w("d", "set", "10.9.0.0/16 -1"); w("l", "remove", "10.1.0.0/16 7")
    w("r", "add", "10.9.0.0/16"); w("d", "add", "10.9.0.0/16 1 2"); w("l", "set", "10.9.0.0/33 1")
    w("st", "add", "10.9.0.0/16 1"); w("st", "remove", "10.0.0.0/8")
    table("r", "d", "l")
    for h, v in [("add", "10.9.0.0/16 10.0.0.5 2"), ("set", "10.1.0.0/16 0"),
                 ("set", "172.16.0.0/12 2"), ("remove", "10.1.2.128/25")]:
        for e in "rdl":
            w(e, h, v)
    w("r", "remove", "192.168.1.7/32 10.0.0.3 2"); w("d", "remove", "192.168.1.7 10.0.0.3 2")
    w("l", "remove", "192.168.1.7/32 10.0.0.3 2")
    w("r", "remove", "0/0"); w("l", "remove", "0.0.0.0/0 10.0.0.254 1")
    table("r", "d", "l")
    for a in ("10.1.2.200", "8.8.8.8"):
        for e in "rdl":
            lookup(e, a)
    route_trace()
    base = "add 8.0.0.0/8 1\nset 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16\n"
    w("r", "ctrl", base + "add 10.9.0.0/16 1")
    w("d", "ctrl", base + "remove 10.8.0.0/16")
    w("l", "ctrl", base + "add 10.8.0.0/16 3")
    w("r", "ctrl", "add 8.0.0.0/8 1\nflush")
    table("r", "d", "l")
    base = "add 8.0.0.0/8 1\n  set 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16 - 1\n"
    w("r", "ctrl", base + "add 0/0 2")
    w("d", "ctrl", base + "set 0/0 10.0.0.253 0")
    w("l", "ctrl", base + "add 0/0 2")
    table("r", "d", "l")
    lookup("r", "8.8.8.8"); lookup("d", "8.8.8.8"); lookup("l", "192.168.3.3")
    w("r", "flush"); w("d", "flush")
    table("r", "d")
    lookup("r", "10.5.5.5"); lookup("d", "10.5.5.5")
    w("r", "add", "10.0.0.0/8 10.0.0.7 1"); w("d", "add", "10.0.0.0/8 10.0.0.7 1")
    w("l", "remove", "10.0.0.0/8"); w("l", "add", "10.0.0.0/8 10.0.0.7 1")
    route_trace()
    table("r", "d", "l", "st")

    for (e, k), ps in outs.items():
        write_todump(os.path.join(HERE, "expected_%s%d.pcap" % (e, k)), ps)
    with open(os.path.join(HERE, "expected.txt"), "w") as fh:
        fh.write("".join(out))


main()
