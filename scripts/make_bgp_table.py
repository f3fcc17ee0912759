#!/usr/bin/env python3
"""Writes a deterministic BGP-like IPv4 routing table for pronto's route
lookup elements (RadixIPLookup, DirectIPLookup, LinearIPLookup,
StaticIPLookup) to standard output, one route per line in the
`ROUTES FILE` syntax:

    PREFIX/LEN GATEWAY OUTPUT

The prefix-length mix follows a default-free-zone table: about 58% /24,
most of the rest /16-/23, few shorter than /16. Prefixes avoid private,
loopback, link-local, documentation, benchmarking (198.18.0.0/15),
multicast and reserved space. The first lines are fixed "anchor" routes
(also in examples/router-routes.txt) so that examples route the same
with the small and the full table.

Usage: python3 scripts/make_bgp_table.py [N] [--seed S]
       [--hops GW:OUT,GW:OUT,...] > routes.txt
Defaults: N = 170000, seed 1, hops 10.0.0.2:1,10.0.1.2:2 (the neighbours
of examples/router.click). The shared benchmark's routes.txt lines
(`PREFIX/LEN OUT`) are accepted by ROUTES FILE as they are.
"""
import random
import sys

ANCHORS = [
    "198.51.100.0/24 10.0.0.2 1",
    "203.0.113.0/24 10.0.1.2 2",
    "203.0.113.128/25 10.0.0.2 1",
]

# Share of each prefix length (public RIB statistics, rounded).
DIST = {24: 0.58, 23: 0.07, 22: 0.11, 21: 0.045, 20: 0.05, 19: 0.03, 18: 0.015,
        17: 0.01, 16: 0.025, 15: 0.004, 14: 0.003, 13: 0.002, 12: 0.001,
        11: 0.0005, 10: 0.0003, 9: 0.0001, 8: 0.0001}

# (first address, prefix length) of space that never appears.
EXCLUDED = [(0x00000000, 8), (0x0A000000, 8), (0x64400000, 10), (0x7F000000, 8),
            (0xA9FE0000, 16), (0xAC100000, 12), (0xC0000000, 24), (0xC0000200, 24),
            (0xC0A80000, 16), (0xC6120000, 15), (0xC6336400, 24), (0xCB007100, 24),
            (0xE0000000, 3)]


def excluded(a, l):
    for base, bl in EXCLUDED:
        m = min(l, bl)
        mask = (0xFFFFFFFF << (32 - m)) & 0xFFFFFFFF
        if (a & mask) == (base & mask):
            return True
    return False


def ip(a):
    return "%d.%d.%d.%d" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255)


def main(argv):
    n, seed, hops = 170000, 1, "10.0.0.2:1,10.0.1.2:2"
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--seed":
            seed = int(args.pop(0))
        elif a == "--hops":
            hops = args.pop(0)
        elif a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        else:
            n = int(a)
    hops = [h.split(":") for h in hops.split(",")]
    rng = random.Random(seed)
    lens = sorted(DIST)
    weights = [DIST[l] for l in lens]
    out = sys.stdout
    seen = set()
    for line in ANCHORS[:n]:
        out.write(line + "\n")
        p, l = line.split()[0].split("/")
        seen.add((p, int(l)))
    count = min(n, len(ANCHORS))
    while count < n:
        l = rng.choices(lens, weights)[0]
        a = rng.getrandbits(32) & ((0xFFFFFFFF << (32 - l)) & 0xFFFFFFFF)
        if excluded(a, l) or (ip(a), l) in seen:
            continue
        seen.add((ip(a), l))
        gw, port = hops[rng.randrange(len(hops))]
        out.write("%s/%d %s %s\n" % (ip(a), l, gw, port))
        count += 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
