#!/usr/bin/env python3
"""Write examples/stateful-firewall.pcap: a small, deterministic trace for
examples/stateful-firewall.click, traffic in both directions between the
trusted network 10.0.0.0/24 and the Internet: a full TCP session with its
teardown and a late out-of-state SYN, a second handshake, a port scan, stray
ACK and RST segments, DNS with a spoofed reply, an ICMP error about a UDP
flow, a ping and an unsolicited one, a connection the policy denies, and an
ARP frame. Run from the repository root."""
import struct

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
ident = 0

def ipv4(src, dst, proto, l4):
    global ident
    ident += 1
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident, 0, 64, proto, 0, ip4(src), ip4(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + l4

def l4sum(src, dst, proto, seg):
    return csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, proto, len(seg)) + seg)

SYN, ACK, FIN, RST, PSH = 0x02, 0x10, 0x01, 0x04, 0x08

def tcp(src, sport, dst, dport, flags, seq=1000, ack=0, payload=b""):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0) + payload
    return ipv4(src, dst, 6, seg[:16] + struct.pack("!H", l4sum(src, dst, 6, seg)) + seg[18:])

def udp(src, sport, dst, dport, payload=b"pronto-dns"):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = l4sum(src, dst, 17, seg) or 0xFFFF
    return ipv4(src, dst, 17, seg[:6] + struct.pack("!H", c) + seg[8:])

def icmp(src, dst, typ, code, rest, payload):
    msg = struct.pack("!BBH", typ, code, 0) + rest + payload
    return ipv4(src, dst, 1, msg[:2] + struct.pack("!H", csum(msg)) + msg[4:])

frames = []
def add(ipbytes):
    f = ETH + ipbytes
    frames.append(f + b"\0" * max(0, 60 - len(f)))

C, S = "10.0.0.5", "93.184.216.34"
# 1: a TCP session and its teardown (8 packets, all pass).
add(tcp(C, 40000, S, 443, SYN, 100))
add(tcp(S, 443, C, 40000, SYN | ACK, 500, 101))
add(tcp(C, 40000, S, 443, ACK, 101, 501))
add(tcp(C, 40000, S, 443, PSH | ACK, 101, 501, b"GET / HTTP/1.1\r\n\r\n"))
add(tcp(S, 443, C, 40000, PSH | ACK, 501, 119, b"HTTP/1.1 200 OK\r\n\r\n"))
add(tcp(S, 443, C, 40000, FIN | ACK, 520, 119))
add(tcp(C, 40000, S, 443, FIN | ACK, 119, 521))
add(tcp(S, 443, C, 40000, ACK, 521, 120))
# 2: a late SYN from the server on the closed connection: out of state.
add(tcp(S, 443, C, 40000, SYN, 9000))
# 3: a second handshake, left established.
add(tcp("10.0.0.6", 40001, "151.101.1.69", 80, SYN, 200))
add(tcp("151.101.1.69", 80, "10.0.0.6", 40001, SYN | ACK, 700, 201))
add(tcp("10.0.0.6", 40001, "151.101.1.69", 80, ACK, 201, 701))
# 4: a port scan from outside (unsolicited).
for port in (22, 23, 3389):
    add(tcp("198.51.100.66", 6666, C, port, SYN))
# 5: stray segments of no connection.
add(tcp("198.51.100.66", 80, C, 1234, ACK, 1, 1))
add(tcp("198.51.100.66", 80, "10.0.0.7", 5555, RST, 1))
# 6: DNS, and a spoofed reply from another server (unsolicited).
add(udp(C, 5353, "8.8.8.8", 53))
add(udp("8.8.8.8", 53, C, 5353, b"pronto-dns-answer"))
add(udp("8.8.4.4", 53, C, 5353, b"pronto-dns-spoofed"))
# 7: a query whose server is down: port unreachable quoting it (related).
q = udp("10.0.0.7", 5454, "9.9.9.9", 53)
add(q)
add(icmp("9.9.9.9", "10.0.0.7", 3, 3, b"\0\0\0\0", q[:28]))
# 8: a ping and its reply; a ping from outside (unsolicited).
add(icmp(C, "1.1.1.1", 8, 0, struct.pack("!HH", 0x77, 1), b"pronto-ping-data"))
add(icmp("1.1.1.1", C, 0, 0, struct.pack("!HH", 0x77, 1), b"pronto-ping-data"))
add(icmp("198.51.100.66", C, 8, 0, struct.pack("!HH", 0x99, 1), b"pronto-ping-data"))
# 9: telnet out (denied by the policy); a bare ACK from inside with no
# connection (allowed by the policy, no connection).
add(tcp(C, 40002, S, 23, SYN))
add(tcp("10.0.0.8", 44444, S, 443, ACK, 1, 1))
# 10: ARP.
frames.append(bytes.fromhex("ffffffffffff" "020000000001" "0806") + bytes(46))

with open("examples/stateful-firewall.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, fr in enumerate(frames):
        f.write(struct.pack("<IIII", 1700000000 + i // 10, (i % 10) * 100000, len(fr), len(fr)))
        f.write(fr)
print(f"wrote examples/stateful-firewall.pcap: {len(frames)} frames")
