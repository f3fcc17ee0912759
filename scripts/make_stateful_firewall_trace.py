#!/usr/bin/env python3
"""Write examples/stateful-firewall.pcap: a small, deterministic trace for
examples/stateful-firewall.click, traffic in both directions between the
trusted network 10.0.0.0/24 and the Internet: a full TCP session with its
teardown and a late out-of-state SYN, a second handshake, a port scan, stray
ACK and RST segments, DNS with a spoofed reply, an ICMP error about a UDP
flow, a ping and an unsolicited one, a connection the policy denies, and an
ARP frame. Run from the repository root."""
import struct
import tracelib
from tracelib import icmp, tcp

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

tracelib.write_pcap("examples/stateful-firewall.pcap", frames)
