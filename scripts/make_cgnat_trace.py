#!/usr/bin/env python3
"""Write examples/cgnat.pcap: a small, deterministic trace for
examples/cgnat.click. Subscribers in 100.64.0.0/24 talk to the Internet
through a carrier-grade NAT with the pool 198.51.100.4/30: DNS queries and
their replies, a reply from a host the subscriber never contacted (allowed:
endpoint-independent filtering), a hairpinned packet between two
subscribers, a burst of TCP connections that uses up one subscriber's port
quota, unsolicited inbound packets, a ping, a source outside the subscriber
range, an ARP frame and ICMP errors both ways. Run from the repository root."""
import struct
import tracelib
from tracelib import icmp, tcp as tcp_


def tcp(src, sport, dst, dport, flags):
    return tcp_(src, sport, dst, dport, flags, 1000, 0 if flags == 0x02 else 2000)


def udp(src, sport, dst, dport, payload=b"pronto-dns-query"):
    return tracelib.udp(src, sport, dst, dport, payload)


def icmp_echo(src, dst, typ, ident_):
    return icmp(src, dst, typ, 0, struct.pack("!HH", ident_, 1), b"pronto-ping-data")


def icmp_error(src, dst, typ, code, quoted, mtu=0):
    # The quoted packet: its IP header and first 8 transport bytes.
    return icmp(src, dst, typ, code, struct.pack("!HH", 0, mtu), quoted[:28])


frames = []
def add(ipbytes):
    frames.append(tracelib.eth(ipbytes))

SUB = lambda k: f"100.64.0.{k}"
# Pool index = subscriber address mod 4; each subscriber's first block on
# its address: (external address, first port of the block).
first = {1: ("198.51.100.5", 1024), 2: ("198.51.100.6", 1024), 3: ("198.51.100.7", 1024),
         4: ("198.51.100.4", 1024), 5: ("198.51.100.5", 1040), 6: ("198.51.100.6", 1040)}
# A: DNS queries from six subscribers.  B: the replies.
for k in range(1, 7):
    add(udp(SUB(k), 40000 + k, "8.8.8.8", 53))
for k in range(1, 7):
    ext, port = first[k]
    add(udp("8.8.8.8", 53, ext, port, b"pronto-dns-reply"))
# C: a host subscriber 2 never contacted reaches its mapping.
add(udp("203.0.113.50", 9999, "198.51.100.6", 1024, b"hello-from-afar"))
# D: subscriber 3 sends to subscriber 2's external address:port (hairpin).
add(udp(SUB(3), 5000, "198.51.100.6", 1024, b"hello-neighbour"))
# E: subscriber 1 opens 36 TCP connections: 2 blocks of 16 ports, 4 too many.
for i in range(36):
    add(tcp(SUB(1), 50000 + i, "93.184.216.34", 443, 0x02))
# F: SYN-ACKs for the first two.
add(tcp("93.184.216.34", 443, "198.51.100.5", 1024, 0x12))
add(tcp("93.184.216.34", 443, "198.51.100.5", 1025, 0x12))
# G: unsolicited inbound: no mapping behind these.
add(tcp("198.51.100.66", 6666, "198.51.100.5", 2000, 0x02))
add(tcp("198.51.100.66", 6666, "198.51.100.4", 1024, 0x02))
add(udp("198.51.100.66", 6666, "198.51.100.7", 1030))
add(udp("198.51.100.66", 6666, "192.0.2.1", 1024))
# H: a ping from subscriber 4 and its reply.
add(icmp_echo(SUB(4), "1.1.1.1", 8, 0x0777))
add(icmp_echo("1.1.1.1", "198.51.100.4", 0, 1024))
# I: a seventh subscriber (paired with 198.51.100.7, second block).
add(udp(SUB(7), 40007, "8.8.8.8", 53))
# J: ARP.  K: a source in 100.64.0.0/10 but outside the subscriber range.
frames.append(tracelib.ARP)
add(udp("100.64.1.9", 40009, "8.8.8.8", 53))
# L: ICMP errors (RFC 5508). A router reports that subscriber 1's DNS
# query (as translated) exceeded its TTL: back to 100.64.0.1.
add(icmp_error("203.0.113.1", "198.51.100.5", 11, 0, udp("198.51.100.5", 1024, "8.8.8.8", 53)))
# Subscriber 6 answers the DNS reply it got with port unreachable: out
# from its mapping's address, the quoted packet translated too.
add(icmp_error(SUB(6), "8.8.8.8", 3, 3, udp("8.8.8.8", 53, SUB(6), 40006, b"pronto-dns-reply")))
# An error quoting a port no mapping holds: dropped.
add(icmp_error("203.0.113.1", "198.51.100.5", 3, 4, udp("198.51.100.5", 1500, "8.8.8.8", 53), 1280))

tracelib.write_pcap("examples/cgnat.pcap", frames)
