#!/usr/bin/env python3
"""Writes a deterministic IPv6 BGP-like routing table for LookupIP6Route to
standard output, one route per line:

    PREFIX/LEN GATEWAY OUTPUT

(the syntax of LookupIP6Route's arguments and of its ROUTES FILE). The
output is not kept in the repository: generate it when needed, e.g.

    python3 bench/route6_table.py > target/route6_table.txt
    ROUTE6_TABLE=target/route6_table.txt cargo bench -p pronto-elements --bench route_lookup

`pronto_elements::ip6::route6_table::synthetic_bgp6` makes the same table
(same generator, same seed: the same lines in the same order), so the
benchmark needs no file.

The model (public IPv6 default-free-zone statistics, rounded; per mille of
the prefixes):

    /48 470   /32 120   /44 80   /40 60   /29 35   /36 30   /46 30
    /47 20    /42 15    /45 15   /30 10   /33-/35 10 each   /38 10
    /41 10    /43 10    /56 10   /64 10   /128 5   /28 5    /31 5
    /37 5     /39 5     /24 5    /20 3    /19 2

so most are /48 and /32-/44, some /29-/31, few longer than /48 (/56, /64
and /128 host routes) or shorter than /28. Prefixes of /29-/32 are
"allocations"; 80% of the longer ones are carved out of an allocation made
earlier (more-specifics cluster under their holder's block, as in the real
table), the rest fall anywhere in the regional registries' blocks
2001::/16, 2400::/12, 2600::/12, 2800::/12, 2a00::/12, 2c00::/12.
Duplicates are skipped. Next hops: OUTPUT 0-3, GATEWAY fe80::1-fe80::4.

The random numbers come from xorshift64 (shifts 13, 7, 17) seeded with
SEED, so that the Rust generator can reproduce them exactly.

Usage: python3 bench/route6_table.py [N] [--seed S]   (N = 200000, S = 1)
"""
import ipaddress
import sys

M64 = (1 << 64) - 1
M128 = (1 << 128) - 1

DIST = [(48, 470), (32, 120), (44, 80), (40, 60), (29, 35), (36, 30), (46, 30),
        (47, 20), (42, 15), (45, 15), (30, 10), (33, 10), (34, 10), (35, 10),
        (38, 10), (41, 10), (43, 10), (56, 10), (64, 10), (128, 5), (28, 5),
        (31, 5), (37, 5), (39, 5), (24, 5), (20, 3), (19, 2)]
assert sum(w for _, w in DIST) == 1000

BLOCKS = [(0x2001 << 112, 16), (0x2400 << 112, 12), (0x2600 << 112, 12),
          (0x2800 << 112, 12), (0x2a00 << 112, 12), (0x2c00 << 112, 12)]


class Rng:
    def __init__(self, seed):
        # A zero state would stay zero.
        self.x = (seed * 0x9E3779B97F4A7C15) & M64 or 1

    def next(self):
        x = self.x
        x ^= (x << 13) & M64
        x ^= x >> 7
        x ^= (x << 17) & M64
        self.x = x
        return x


def mask(length):
    return (M128 << (128 - length)) & M128 if length else 0


def table(n, seed):
    rng = Rng(seed)
    seen = set()
    allocs = []
    routes = []
    while len(routes) < n:
        x = rng.next()
        pick = x % 1000
        length = 48
        for l, w in DIST:
            if pick < w:
                length = l
                break
            pick -= w
        y = rng.next()
        if length > 32 and allocs and y % 10 < 8:
            paddr, plen = allocs[(y >> 8) % len(allocs)]
        else:
            paddr, plen = BLOCKS[(y >> 4) % len(BLOCKS)]
        z = (rng.next() << 64) | rng.next()
        addr = (paddr | (z & ~mask(plen) & M128)) & mask(length)
        if (addr, length) in seen:
            continue
        seen.add((addr, length))
        if 29 <= length <= 32:
            allocs.append((addr, length))
        out = (x >> 20) % 4
        routes.append((addr, length, out))
    return routes


def main(argv):
    n, seed = 200000, 1
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '--seed':
            seed = int(args.pop(0))
        else:
            n = int(a)
    w = sys.stdout.write
    for addr, length, out in table(n, seed):
        w(f"{ipaddress.IPv6Address(addr)}/{length} fe80::{out + 1} {out}\n")


if __name__ == '__main__':
    main(sys.argv[1:])
