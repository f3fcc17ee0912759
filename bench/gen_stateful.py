#!/usr/bin/env python3
"""Generate the stateful firewall's benchmark traces: TCP and UDP sessions
between a trusted network and the Internet, both directions interleaved, in
IPv4 and as IPv6 twins (the same sessions, packets and order).

Outputs (in the current directory):
  sessions.pcap   : N 64-byte frames; inside hosts in 10.0.0.0/8
  sessions6.pcap  : the same N packets with IPv6 headers (84-byte frames);
                    inside hosts in fd00::/8, outside in 2001:db8::/32

Each of F flows (60% TCP, 40% UDP) starts with its opening packets (TCP:
SYN, SYN-ACK, ACK; UDP: a datagram from inside), then packets of random
open flows follow in random directions (TCP: ACK with data flags), so that
most packets find an established connection, as on a real link. Transport
checksums are left zero (nothing on the benchmark's path checks them).

  python3 bench/gen_stateful.py [N] [F]     # defaults 300000, 20000
"""
import random, struct, sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
F = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
rng = random.Random(2468)

def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff

ETH4 = bytes.fromhex('020000000002' '020000000001' '0800')
ETH6 = bytes.fromhex('020000000002' '020000000001' '86dd')

def l4(proto, sport, dport, flags):
    if proto == 17:
        return struct.pack('!HHHH', sport, dport, 8 + 22, 0) + bytes(22)
    return struct.pack('!HHIIBBHHH', sport, dport, 1, 1, 0x50, flags, 8192, 0, 0) + bytes(10)

def frame4(src, dst, proto, sport, dport, flags):
    t = l4(proto, sport, dport, flags)
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(t), 0, 0, 64, proto, 0,
                     src.to_bytes(4, 'big'), dst.to_bytes(4, 'big'))
    f = ETH4 + ip[:10] + struct.pack('!H', csum(ip)) + ip[12:] + t
    return f[:64] + bytes(64 - len(f))

def frame6(src, dst, proto, sport, dport, flags):
    t = l4(proto, sport, dport, flags)
    ip = struct.pack('!IHBB16s16s', 0x60000000, len(t), proto, 64,
                     src.to_bytes(16, 'big'), dst.to_bytes(16, 'big'))
    f = ETH6 + ip + t
    return f[:84] + bytes(84 - len(f))

def six(a, inside):
    # 10.x.y.z -> fd00::x:y:z ; a.b.c.d -> 2001:db8::a.b.c.d
    return ((0xfd << 120) | (a & 0xffffff)) if inside else ((0x20010db8 << 96) | a)

flows = []
for _ in range(F):
    proto = 6 if rng.random() < 0.6 else 17
    c = (10 << 24) | rng.randrange(1 << 24)
    s = rng.randrange(1 << 24, 223 << 24)
    while s >> 24 in (10, 127):  # not the inside, nor what CheckIPHeader refuses
        s = rng.randrange(1 << 24, 223 << 24)
    flows.append((proto, c, rng.randrange(1024, 65536), s, rng.choice([80, 443, 53, 123, 8080])))

# (flow, from_inside, tcp flags)
pkts = []
opened = 0
while len(pkts) < N:
    if opened < F and (rng.random() < 0.15 or opened < 64):
        f = flows[opened]; opened += 1
        if f[0] == 6:
            pkts += [(f, True, 0x02), (f, False, 0x12), (f, True, 0x10)]
        else:
            pkts.append((f, True, 0))
    else:
        f = flows[rng.randrange(opened)]
        pkts.append((f, rng.random() < 0.5, 0x18 if rng.random() < 0.5 else 0x10))
pkts = pkts[:N]

def write_pcap(name, frames):
    with open(name, 'wb') as out:
        out.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        buf = []
        for i, fr in enumerate(frames):
            buf.append(struct.pack('<IIII', 1_000_000_000 + i // 1_000_000, i % 1_000_000, len(fr), len(fr)))
            buf.append(fr)
        out.write(b''.join(buf))

def frames(v6):
    for (proto, c, cp, s, sp), inside, flags in pkts:
        mk = frame6 if v6 else frame4
        a, b = (six(c, True), six(s, False)) if v6 else (c, s)
        yield mk(a, b, proto, cp, sp, flags) if inside else mk(b, a, proto, sp, cp, flags)

write_pcap('sessions.pcap', frames(False))
write_pcap('sessions6.pcap', frames(True))
print(f'wrote sessions.pcap, sessions6.pcap: {N} packets, {opened} flows opened')
