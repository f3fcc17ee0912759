#!/usr/bin/env python3
"""Write examples/stateful-firewall.pcap: a small, deterministic trace for
examples/stateful-firewall.click, traffic in both directions between the
trusted network 10.0.0.0/24 and the Internet: a full TCP session with its
teardown and a late out-of-state SYN, a second handshake, a port scan, stray
ACK and RST segments, DNS with a spoofed reply, an ICMP error about a UDP
flow, a ping and an unsolicited one, a connection the policy denies, and an
ARP frame; then the IPv6 part (the trusted network 2001:db8:1::/64): a TCP
session with its teardown, DNS with a packet-too-big error about it, a
ping and an unsolicited one, Neighbor Discovery both ways, a port scan, a
fragment and a denied connection. The IPv6 frames come after the IPv4 ones,
so that the IPv4 frames (and their IP identifiers) stay as they were. Run
from the repository root."""
import struct
import tracelib
from tracelib import icmp, icmp6, tcp, tcp6

SYN, ACK, FIN, RST, PSH = 0x02, 0x10, 0x01, 0x04, 0x08

def udp(src, sport, dst, dport, payload=b"pronto-dns"):
    return tracelib.udp(src, sport, dst, dport, payload)

frames = []
def add(ipbytes):
    frames.append(tracelib.eth(ipbytes))

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
frames.append(tracelib.ARP)

# IPv6, from frame 28 on.
C6, S6, R6 = "2001:db8:1::5", "2001:db8:ff::34", "2001:db8:ff::1"
DNS6 = "2001:4860:4860::8888"
# 11 (28-35): a TCP session and its teardown (all pass).
add(tcp6(C6, 40010, S6, 443, SYN, 100))
add(tcp6(S6, 443, C6, 40010, SYN | ACK, 500, 101))
add(tcp6(C6, 40010, S6, 443, ACK, 101, 501))
add(tcp6(C6, 40010, S6, 443, PSH | ACK, 101, 501, b"GET / HTTP/1.1\r\n\r\n"))
add(tcp6(S6, 443, C6, 40010, PSH | ACK, 501, 119, b"HTTP/1.1 200 OK\r\n\r\n"))
add(tcp6(C6, 40010, S6, 443, FIN | ACK, 119, 520))
add(tcp6(S6, 443, C6, 40010, FIN | ACK, 520, 120))
add(tcp6(C6, 40010, S6, 443, ACK, 120, 521))
# 12 (36-38): DNS and its reply; a packet-too-big from a router on the way
# quoting the query (related).
q6 = tracelib.udp6(C6, 5300, DNS6, 53, b"pronto-dns6")
add(q6)
add(tracelib.udp6(DNS6, 53, C6, 5300, b"pronto-dns6-answer"))
add(icmp6(R6, C6, 2, 0, struct.pack("!I", 1280), q6))
# 13 (39-41): a ping and its reply; a ping from outside (unsolicited).
add(icmp6(C6, S6, 128, 0, struct.pack("!HH", 0x66, 1), b"pronto-ping6"))
add(icmp6(S6, C6, 129, 0, struct.pack("!HH", 0x66, 1), b"pronto-ping6"))
add(icmp6("2001:db8:66::66", C6, 128, 0, struct.pack("!HH", 0x99, 1), b"pronto-ping6"))
# 14 (42-43): Neighbor Discovery: the router solicits the host's address,
# the host answers (both pass by the ND policy).
mac_r, mac_c = bytes.fromhex("020000000002"), bytes.fromhex("020000000001")
add(icmp6("fe80::1", "ff02::1:ff00:5", 135, 0, b"\0" * 4,
          tracelib.ip6a(C6) + b"\x01\x01" + mac_r, hlim=255))
add(icmp6(C6, "fe80::1", 136, 0, b"\x60\0\0\0",
          tracelib.ip6a(C6) + b"\x02\x01" + mac_c, hlim=255))
# 15 (44): a SYN from outside to ssh (unsolicited).
add(tcp6("2001:db8:66::66", 6666, C6, 22, SYN))
# 16 (45): the first fragment of a datagram from outside (dropped).
frag = struct.pack("!BBHI", 17, 0, 0x0001, 0x1234)  # offset 0, M
add(tracelib.ipv6(DNS6, C6, 17, struct.pack("!HHHH", 53, 5300, 1300, 0) + b"x" * 24,
                  ext=frag, ext_nh=44))
# 17 (46): telnet out over IPv6 (denied by the policy).
add(tcp6(C6, 40011, S6, 23, SYN))

tracelib.write_pcap("examples/stateful-firewall.pcap", frames)
