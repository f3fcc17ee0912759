#!/usr/bin/env python3
"""Generate the IPv6 twins of gen_bench.py's traces: the same number of
packets, flows, protocols and ports, with IPv6 headers (84-byte Ethernet
frames: the IPv4 frames' 64 bytes plus the 20 bytes IPv6's header adds).

Outputs (in the current directory):
  flows6.pcap  : N packets drawn from a pool of F flows (firewall twin)
  nat64.pcap   : flows6.pcap's packets with each destination replaced by an
                 IPv4 address under NAT64's 64:ff9b::/96 (the stateful NAT64
                 twin of CGNAT on flows.pcap: the same number of flows,
                 inside sources, protocols and ports)
  route6.pcap  : N packets, each to a random address inside a random prefix of
                 routes6.txt (one in ten anywhere in 2000::/3)
  routes6.txt  : 200,000 IPv6 prefixes "addr/len port", the length
                 distribution of the public IPv6 BGP table (see below)
"""
import random, struct, sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3_000_000
F = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
NROUTES = 200_000
rng = random.Random(12345)

def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b)//2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff

ETH = bytes.fromhex('020000000002' '020000000001' '86dd')
PAYLOAD = 10 # as the IPv4 64-byte frames carry after a TCP header

def frame(src, dst, proto, sport, dport):
    if proto == 17:
        paylen = PAYLOAD + 12
        l4 = struct.pack('!HHHH', sport, dport, 8 + paylen, 0)
    else:
        paylen = PAYLOAD
        l4 = struct.pack('!HHIIBBHHH', sport, dport, rng.randrange(1 << 32), 0, 0x50, 0x10, 8192, 0, 0)
    payload = bytes(paylen)
    s, d = src.to_bytes(16, 'big'), dst.to_bytes(16, 'big')
    ulen = len(l4) + paylen
    pseudo = s + d + struct.pack('!IxxxB', ulen, proto)
    c = csum(pseudo + l4 + payload)
    if proto == 17:
        l4 = l4[:6] + struct.pack('!H', c or 0xffff)
    else:
        l4 = l4[:16] + struct.pack('!H', c) + l4[18:]
    ip = struct.pack('!IHBB', (6 << 28) | rng.randrange(1 << 20), ulen, proto, 64) + s + d
    f = ETH + ip + l4 + payload
    assert len(f) == 84, len(f)
    return f

def rand_global():
    # 2000::/3, avoiding the documentation prefix.
    while True:
        a = (1 << 125) | rng.randrange(1 << 125)
        if a >> 96 != 0x20010db8:
            return a

PORTS = [80, 443, 53, 22, 25, 123, 8080, 3306, 5000, 6000, 161, 1234]
INSIDE = 0xfd00 << 112  # fd00::/16, the twin of 10.0.0.0/8

def rand_flow():
    proto = 6 if rng.random() < 0.6 else 17
    src = INSIDE | rng.randrange(1 << 112)
    dst = rand_global()
    sport = rng.randrange(1024, 65536)
    dport = rng.choice(PORTS) if rng.random() < 0.8 else rng.randrange(1, 65536)
    return src, dst, proto, sport, dport

def write_pcap(name, frames_iter):
    with open(name, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        out = []
        for i, fr in enumerate(frames_iter):
            out.append(struct.pack('<IIII', 1_000_000_000 + i // 1_000_000, i % 1_000_000, len(fr), len(fr)))
            out.append(fr)
            if len(out) >= 200_000:
                f.write(b''.join(out)); out = []
        f.write(b''.join(out))

pool = [frame(*rand_flow()) for _ in range(F)]
def flows_iter():
    r = random.Random(777)
    for _ in range(N):
        yield pool[r.randrange(F)]
write_pcap('flows6.pcap', flows_iter())

# nat64.pcap: the same flows to 64:ff9b::<IPv4>, the IPv4 address taken
# from the low 32 bits of the flow's destination (kept out of the NAT's
# pool 198.51.100.0/24 and of 0/8, 10/8, 127/8, 224/3).
WKP = 0x0064ff9b << 96
def v4_dst(d):
    a = d & 0xffffffff
    while (a >> 24) in (0, 10, 127) or (a >> 29) == 7 or (a >> 8) == 0xc63364:
        a = (a * 2654435761 + 1) & 0xffffffff
    return a
def nat64_frame(fr):
    b = bytearray(fr)
    old = int.from_bytes(b[38:54], 'big')
    new = WKP | v4_dst(old)
    b[38:54] = new.to_bytes(16, 'big')
    # The transport checksum follows the destination (RFC 1624).
    off = 54 + (16 if b[20] == 6 else 6)
    c = int.from_bytes(b[off:off + 2], 'big')
    s = (~c & 0xffff)
    for k in range(0, 16, 2):
        s += (~int.from_bytes(old.to_bytes(16, 'big')[k:k + 2], 'big') & 0xffff)
        s += int.from_bytes(new.to_bytes(16, 'big')[k:k + 2], 'big')
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    b[off:off + 2] = ((~s & 0xffff) or 0xffff).to_bytes(2, 'big')
    return bytes(b)
def as_syn(fr):
    """A TCP frame made a SYN (flags 0x10 -> 0x02, checksum adjusted): a
    NAT64 opens TCP sessions on SYNs only (RFC 6146), where CGNAT maps
    any segment."""
    b = bytearray(fr)
    old = int.from_bytes(b[66:68], 'big')
    b[67] = 0x02
    new = int.from_bytes(b[66:68], 'big')
    s = (~int.from_bytes(b[70:72], 'big') & 0xffff) + (~old & 0xffff) + new
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    b[70:72] = (~s & 0xffff).to_bytes(2, 'big')
    return bytes(b)
nat64_pool = [nat64_frame(fr) for fr in pool]
def nat64_iter():
    # The same draws as flows6.pcap; a TCP flow's first packet is a SYN.
    r = random.Random(777)
    seen = set()
    for _ in range(N):
        k = r.randrange(F)
        fr = nat64_pool[k]
        if k not in seen:
            seen.add(k)
            if fr[20] == 6:
                fr = as_syn(fr)
        yield fr
write_pcap('nat64.pcap', nat64_iter())

# routes6.txt: the prefix-length distribution of the public IPv6 BGP
# table in 2024-2025 (about 200,000 prefixes: /48 about half, /32-/44
# most of the rest, a few /29-/31 and longer than /48), drawn in 2000::/3.
dist = {48: 0.48, 44: 0.09, 40: 0.06, 36: 0.035, 32: 0.12, 46: 0.03, 47: 0.02, 42: 0.015,
        45: 0.015, 43: 0.01, 41: 0.01, 38: 0.01, 39: 0.01, 34: 0.01, 35: 0.005, 33: 0.01,
        37: 0.005, 29: 0.01, 30: 0.005, 31: 0.005, 28: 0.003, 56: 0.01, 64: 0.01, 52: 0.002,
        60: 0.001, 24: 0.001, 20: 0.001, 128: 0.001}
lens = list(dist); weights = [dist[l] for l in lens]
seen = set()
with open('routes6.txt', 'w') as f:
    while len(seen) < NROUTES:
        l = rng.choices(lens, weights)[0]
        a = rand_global() & (((1 << 128) - 1) ^ ((1 << (128 - l)) - 1))
        if (a, l) in seen: continue
        seen.add((a, l))
        h = '%032x' % a
        text = ':'.join(h[i:i + 4] for i in range(0, 32, 4))
        f.write('%s/%d %d\n' % (text, l, len(seen) % 4))
# route6.pcap: per packet, a destination inside a random prefix of the
# table (its host bits random), or one time in ten anywhere in 2000::/3
# (mostly the default route): lookups that reach the table's depth, as
# the IPv4 trace's random destinations do for its table. UDP; the route
# path checks no transport checksum, so the template's stays.
prefixes = sorted(seen)
base = bytearray(frame(INSIDE | 1, 0x20010db8 << 96, 17, 1000, 53))
def route_iter():
    r = random.Random(4242)
    for _ in range(N):
        b = bytearray(base)
        if r.random() < 0.9:
            a, l = prefixes[r.randrange(len(prefixes))]
            d = a | (r.randrange(1 << (128 - l)) if l < 128 else 0)
        else:
            d = (1 << 125) | r.randrange(1 << 125)
        b[38:54] = d.to_bytes(16, 'big')
        yield bytes(b)
write_pcap('route6.pcap', route_iter())
print('done')
