#!/usr/bin/env python3
"""Write examples/firewall.pcap: a small, deterministic mix of traffic for
examples/firewall.click (web, ssh, DNS, NTP, SNMP, ping, fragments, spoofed
sources, a bad checksum, ARP). Run from the repository root."""
import random, struct

rng = random.Random(2024)

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF

def ip4(s):
    return bytes(int(x) for x in s.split("."))

ETH = bytes.fromhex("020000000002" "020000000001" "0800")

def ipv4(src, dst, proto, l4, frag=0, ttl=64, bad=False):
    tot = 20 + len(l4)
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, tot, rng.randrange(65536), frag, ttl, proto, 0, ip4(src), ip4(dst))
    c = csum(h) ^ (0x1111 if bad else 0)
    return h[:10] + struct.pack("!H", c) + h[12:] + l4

def l4sum(src, dst, proto, seg):
    return csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, proto, len(seg)) + seg)

def tcp(src, dst, sport, dport, flags=0x02, payload=b""):
    seg = struct.pack("!HHIIBBHHH", sport, dport, rng.randrange(1 << 32), 0, 0x50, flags, 65535, 0, 0) + payload
    c = l4sum(src, dst, 6, seg)
    return ipv4(src, dst, 6, seg[:16] + struct.pack("!H", c) + seg[18:])

def udp(src, dst, sport, dport, payload=b"\0" * 8):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = l4sum(src, dst, 17, seg) or 0xFFFF
    return ipv4(src, dst, 17, seg[:6] + struct.pack("!H", c) + seg[8:])

def icmp_echo(src, dst, typ=8):
    msg = struct.pack("!BBHHH", typ, 0, 0, 0x1234, rng.randrange(100)) + b"pronto-ping-data"
    c = csum(msg)
    return ipv4(src, dst, 1, msg[:2] + struct.pack("!H", c) + msg[4:])

frames = []
def add(ipbytes):
    f = ETH + ipbytes
    frames.append(f + b"\0" * max(0, 60 - len(f)))

for i in range(40):
    add(tcp(f"10.0.{i % 3}.{10 + i}", "93.184.216.34", 40000 + i, 80, payload=b"GET / HTTP/1.1\r\n"))
for i in range(20):
    add(tcp(f"10.1.0.{i + 1}", "151.101.1.69", 41000 + i, 443))
for i in range(10):
    add(tcp(f"10.0.1.{i + 1}", "10.9.9.9", 42000 + i, 22))       # ssh from the admin net: allowed
for i in range(10):
    add(tcp(f"172.16.5.{i + 1}", "10.9.9.9", 43000 + i, 22))     # ssh from elsewhere: denied
for i in range(20):
    add(udp(f"10.0.2.{i + 1}", "8.8.8.8", 50000 + i, 53))
for i in range(10):
    add(udp(f"10.0.2.{i + 1}", "1.1.1.1", 50100 + i, 53))        # DNS to another resolver: denied
for i in range(8):
    add(udp(f"10.0.3.{i + 1}", "129.6.15.28", 123, 123))
for i in range(6):
    add(udp(f"10.0.4.{i + 1}", "10.9.9.1", 51000 + i, 161))      # SNMP: denied
for i in range(12):
    add(icmp_echo(f"10.0.5.{i + 1}", "9.9.9.9"))
for i in range(6):
    add(tcp(f"127.0.0.{i + 1}", "93.184.216.34", 44000 + i, 80))  # spoofed loopback source
for i in range(6):
    ipb = udp(f"10.0.6.{i + 1}", "8.8.4.4", 52000 + i, 53, payload=b"x" * 40)
    # a first fragment (more-fragments flag set)
    add(ipv4(f"10.0.6.{i + 1}", "8.8.4.4", 17, ipb[20:44], frag=0x2000))
for i in range(8):
    add(tcp(f"192.168.1.{i + 10}", "203.0.113.7", 45000 + i, 8080))
bad = tcp("10.0.0.99", "93.184.216.34", 46000, 80)
add(bad[:10] + b"\xde\xad" + bad[12:])                        # bad IP checksum
frames.append(bytes.fromhex("ffffffffffff" "020000000001" "0806") + bytes.fromhex(
    "0001080006040001" "020000000001" "0a000001" "000000000000" "0a000002") + b"\0" * 18)
rng.shuffle(frames)

with open("examples/firewall.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, fr in enumerate(frames):
        f.write(struct.pack("<IIII", 1700000000 + i // 10, (i % 10) * 100000, len(fr), len(fr)))
        f.write(fr)
print(f"wrote examples/firewall.pcap: {len(frames)} frames")
