#!/usr/bin/env python3
"""Write examples/nat.pcap: both interfaces of a small source NAT, as one
trace, for examples/nat.click.

The router's inside interface (MAC 02:00:00:00:00:01) faces 10.0.0.0/24,
its outside interface (MAC 02:00:00:00:00:02, address 198.51.100.1) faces
the upstream gateway (MAC 02:00:00:00:fe:01). A frame's destination MAC
says which interface received it. Inside hosts 10.0.0.2-10.0.0.4 open TCP
and UDP flows and ping; the outside answers. The NAT allocates public ports
sequentially from 1024 (one counter for TCP and UDP, in the order new flows
appear) and echo identifiers from 1024, so the replies here are addressed
to exactly the ports the NAT will pick. The outside also sends ICMP errors
(a traceroute hop, a port unreachable) about translated flows, and
unsolicited packets that the NAT must drop.

Deterministic; run from the repository root."""
import struct

BASE = 1700000000
PUB = "198.51.100.1"
R_IN, R_OUT, GW = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:fe:01"
HOST_MAC = {"10.0.0.2": "02:00:00:00:10:02", "10.0.0.3": "02:00:00:00:10:03",
            "10.0.0.4": "02:00:00:00:10:04", "192.168.1.5": "02:00:00:00:10:99"}


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ipv4(src, dst, proto, l4, ident, ttl=64):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident & 0xFFFF, 0x4000, ttl,
                    proto, 0, ip4(src), ip4(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + l4


def l4sum(src, dst, proto, seg):
    return csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, proto, len(seg)) + seg)


def udp(src, dst, sport, dport, payload):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    return seg[:6] + struct.pack("!H", l4sum(src, dst, 17, seg) or 0xFFFF) + seg[8:]


def tcp(src, dst, sport, dport, seq, ack, flags, payload=b""):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    return seg[:16] + struct.pack("!H", l4sum(src, dst, 6, seg)) + seg[18:]


def icmp(typ, code, rest, payload=b""):
    m = struct.pack("!BBH", typ, code, 0) + rest + payload
    return m[:2] + struct.pack("!H", csum(m)) + m[4:]


def frame(dst_mac, src_mac, ip_pkt):
    f = mac(dst_mac) + mac(src_mac) + b"\x08\x00" + ip_pkt
    return f + bytes(max(0, 60 - len(f)))


class Nat:
    """The mappings the NAT will make: sequential public ports for TCP/UDP
    flows, sequential echo identifiers for pings."""

    def __init__(self):
        self.ports, self.ids = {}, {}

    def port(self, proto, src, sport, dst, dport):
        k = (proto, src, sport, dst, dport)
        if k not in self.ports:
            self.ports[k] = 1024 + len(self.ports)
        return self.ports[k]

    def ident(self, src, ident, dst):
        k = (src, ident, dst)
        if k not in self.ids:
            self.ids[k] = 1024 + len(self.ids)
        return self.ids[k]


def main():
    nat = Nat()
    frames = []
    ident = [100]

    def nid():
        ident[0] += 1
        return ident[0]

    def out_tcp(h, sp, d, dp, seq, ack, flags, data=b""):
        nat.port(6, h, sp, d, dp)
        frames.append(frame(R_IN, HOST_MAC[h], ipv4(h, d, 6, tcp(h, d, sp, dp, seq, ack, flags, data), nid())))

    def in_tcp(h, sp, d, dp, seq, ack, flags, data=b""):
        # reply from d:dp to the inside flow h:sp, addressed to the public side
        pp = nat.port(6, h, sp, d, dp)
        frames.append(frame(R_OUT, GW, ipv4(d, PUB, 6, tcp(d, PUB, dp, pp, seq, ack, flags, data), nid(), 57)))

    def out_udp(h, sp, d, dp, data, ttl=64):
        nat.port(17, h, sp, d, dp)
        frames.append(frame(R_IN, HOST_MAC[h], ipv4(h, d, 17, udp(h, d, sp, dp, data), nid(), ttl)))

    def in_udp(h, sp, d, dp, data):
        pp = nat.port(17, h, sp, d, dp)
        frames.append(frame(R_OUT, GW, ipv4(d, PUB, 17, udp(d, PUB, dp, pp, data), nid(), 57)))

    def ping(h, d, i, seq):
        nat.ident(h, i, d)
        frames.append(frame(R_IN, HOST_MAC[h], ipv4(h, d, 1, icmp(8, 0, struct.pack("!HH", i, seq), b"pronto-nat-ping!"), nid())))

    def pong(h, d, i, seq):
        pi = nat.ident(h, i, d)
        frames.append(frame(R_OUT, GW, ipv4(d, PUB, 1, icmp(0, 0, struct.pack("!HH", pi, seq), b"pronto-nat-ping!"), nid(), 57)))

    def error_about_udp(reporter, typ, code, h, sp, d, dp, data, ttl):
        # the error quotes the packet as it left the NAT: public source and port
        pp = nat.port(17, h, sp, d, dp)
        quoted = ipv4(PUB, d, 17, udp(PUB, d, pp, dp, data), 0, ttl)[:28]
        frames.append(frame(R_OUT, GW, ipv4(reporter, PUB, 1, icmp(typ, code, bytes(4), quoted), nid(), 250)))

    web, web2, dns, dns2 = "93.184.216.34", "93.184.216.35", "8.8.8.8", "1.1.1.1"
    # 10.0.0.2 fetches a page over HTTP (public port 1024).
    out_tcp("10.0.0.2", 40001, web, 80, 1000, 0, 0x02)
    in_tcp("10.0.0.2", 40001, web, 80, 5000, 1001, 0x12)
    out_tcp("10.0.0.2", 40001, web, 80, 1001, 5001, 0x10)
    out_tcp("10.0.0.2", 40001, web, 80, 1001, 5001, 0x18, b"GET / HTTP/1.1\r\nHost: example\r\n\r\n")
    for k in range(4):
        in_tcp("10.0.0.2", 40001, web, 80, 5001 + 400 * k, 1035, 0x18, bytes([65 + k]) * 400)
        out_tcp("10.0.0.2", 40001, web, 80, 1035, 5401 + 400 * k, 0x10)
    # 10.0.0.3 resolves a name (1025).
    out_udp("10.0.0.3", 5353, dns, 53, b"\x12\x34\x01\x00\x00\x01" + bytes(6) + b"\x07example\x03com\x00\x00\x01\x00\x01")
    in_udp("10.0.0.3", 5353, dns, 53, b"\x12\x34\x81\x80\x00\x01\x00\x01" + bytes(4) + b"\x07example\x03com\x00\x00\x01\x00\x01" + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\x5d\xb8\xd8\x22")
    # 10.0.0.2 opens a second connection, to port 443 (1026).
    out_tcp("10.0.0.2", 40002, web2, 443, 7000, 0, 0x02)
    in_tcp("10.0.0.2", 40002, web2, 443, 9000, 7001, 0x12)
    out_tcp("10.0.0.2", 40002, web2, 443, 7001, 9001, 0x10)
    out_tcp("10.0.0.2", 40002, web2, 443, 7001, 9001, 0x18, b"\x16\x03\x01" + bytes(61))
    in_tcp("10.0.0.2", 40002, web2, 443, 9001, 7065, 0x18, b"\x16\x03\x03" + bytes(93))
    # 10.0.0.4 pings twice (echo identifier 1024).
    for s in (1, 2):
        ping("10.0.0.4", "203.0.113.5", 0x0300, s)
        pong("10.0.0.4", "203.0.113.5", 0x0300, s)
    # 10.0.0.3 runs a traceroute probe (1027); the first hop answers.
    out_udp("10.0.0.3", 33434, "203.0.113.9", 33434, bytes(32), ttl=1)
    error_about_udp("192.0.2.254", 11, 0, "10.0.0.3", 33434, "203.0.113.9", 33434, bytes(32), 1)
    # 10.0.0.4 sends to a closed port (1028): port unreachable.
    out_udp("10.0.0.4", 40000, "203.0.113.77", 9999, b"hello?")
    error_about_udp("203.0.113.77", 3, 3, "10.0.0.4", 40000, "203.0.113.77", 9999, b"hello?", 64)
    # 10.0.0.3 asks another resolver from the same port: a new flow (1029).
    out_udp("10.0.0.3", 5353, dns2, 53, b"\x56\x78\x01\x00\x00\x01" + bytes(6) + b"\x07example\x03org\x00\x00\x01\x00\x01")
    in_udp("10.0.0.3", 5353, dns2, 53, b"\x56\x78\x81\x83\x00\x01" + bytes(6) + b"\x07example\x03org\x00\x00\x01\x00\x01")
    # Unsolicited from the outside: dropped and counted.
    scan = "198.18.0.66"
    frames.append(frame(R_OUT, GW, ipv4(scan, PUB, 6, tcp(scan, PUB, 51515, 22, 1, 0, 0x02), nid(), 50)))
    frames.append(frame(R_OUT, GW, ipv4(scan, PUB, 6, tcp(scan, PUB, 51515, 1024, 1, 0, 0x02), nid(), 50)))  # right port, wrong peer
    frames.append(frame(R_OUT, GW, ipv4(scan, PUB, 17, udp(scan, PUB, 5000, 1030, b"knock"), nid(), 50)))
    frames.append(frame(R_OUT, GW, ipv4(scan, PUB, 1, icmp(8, 0, struct.pack("!HH", 7, 1), b"hi"), nid(), 50)))
    frames.append(frame(R_OUT, GW, ipv4(scan, PUB, 1, icmp(0, 0, struct.pack("!HH", 1025, 1), b"hi"), nid(), 50)))
    q = ipv4(PUB, scan, 17, udp(PUB, scan, 2000, 53, b"x"), 0)[:28]             # error about no flow
    frames.append(frame(R_OUT, GW, ipv4(scan, PUB, 1, icmp(3, 3, bytes(4), q), nid(), 50)))
    # Not for the NAT's address; an inside packet with a foreign source; ARP.
    frames.append(frame(R_OUT, GW, ipv4(scan, "198.51.100.77", 17, udp(scan, "198.51.100.77", 1, 2, b"x"), nid())))
    frames.append(frame(R_IN, HOST_MAC["192.168.1.5"], ipv4("192.168.1.5", web, 6, tcp("192.168.1.5", web, 1, 80, 1, 0, 0x02), nid())))
    frames.append(mac("ff:ff:ff:ff:ff:ff") + mac(HOST_MAC["10.0.0.2"]) + b"\x08\x06" + bytes.fromhex("0001080006040001") + mac(HOST_MAC["10.0.0.2"]) + ip4("10.0.0.2") + bytes(6) + ip4("10.0.0.1") + bytes(18))
    # The web server closes the first connection.
    in_tcp("10.0.0.2", 40001, web, 80, 6601, 1035, 0x11)
    out_tcp("10.0.0.2", 40001, web, 80, 1035, 6602, 0x11)
    in_tcp("10.0.0.2", 40001, web, 80, 6602, 1036, 0x10)

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, f in enumerate(frames):
        t = i * 1000
        out.append(struct.pack("<IIII", BASE + t // 1000000, t % 1000000, len(f), len(f)) + f)
    with open("examples/nat.pcap", "wb") as fh:
        fh.write(b"".join(out))
    print("%d frames, %d TCP/UDP mappings, %d ping mappings" % (len(frames), len(nat.ports), len(nat.ids)))


main()
