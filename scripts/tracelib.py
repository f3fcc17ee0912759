"""Packet builders shared by the scripts that write the stateful examples'
traces (make_cgnat_trace.py, make_stateful_firewall_trace.py): IPv4 packets
with numbered identifiers and correct checksums, IPv6 packets (optionally
with extension headers) with correct checksums, Ethernet framing padded to
60 bytes, and a microsecond pcap writer (ten frames a second)."""
import struct

ETH = bytes.fromhex("020000000002" "020000000001" "0800")
ARP = bytes.fromhex("ffffffffffff" "020000000001" "0806") + bytes(46)
_ident = 0


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def ipv4(src, dst, proto, l4):
    """An IPv4 packet; identifiers count 1, 2, ... over the whole trace."""
    global _ident
    _ident += 1
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), _ident, 0, 64, proto, 0, ip4(src), ip4(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + l4


def l4sum(src, dst, proto, seg):
    return csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, proto, len(seg)) + seg)


def tcp(src, sport, dst, dport, flags, seq=1000, ack=0, payload=b""):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0) + payload
    return ipv4(src, dst, 6, seg[:16] + struct.pack("!H", l4sum(src, dst, 6, seg)) + seg[18:])


def udp(src, sport, dst, dport, payload):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = l4sum(src, dst, 17, seg) or 0xFFFF
    return ipv4(src, dst, 17, seg[:6] + struct.pack("!H", c) + seg[8:])


def icmp(src, dst, typ, code, rest, payload):
    msg = struct.pack("!BBH", typ, code, 0) + rest + payload
    return ipv4(src, dst, 1, msg[:2] + struct.pack("!H", csum(msg)) + msg[4:])


def eth(ipbytes):
    """An IPv4 or IPv6 packet (by its version) in an Ethernet frame, padded
    to 60 bytes."""
    f = (ETH if ipbytes[0] >> 4 == 4 else ETH6) + ipbytes
    return f + b"\0" * max(0, 60 - len(f))


ETH6 = ETH[:12] + b"\x86\xdd"


def ip6a(s):
    import ipaddress
    return ipaddress.IPv6Address(s).packed


def ipv6(src, dst, nh, payload, hlim=64, ext=b"", ext_nh=None):
    """An IPv6 packet; `ext` (extension headers, already chained to `nh`)
    goes between the fixed header and `payload`, and `ext_nh` is the fixed
    header's next header then."""
    body = ext + payload
    first = nh if not ext else ext_nh
    return struct.pack("!IHBB", 0x60000000, len(body), first, hlim) + ip6a(src) + ip6a(dst) + body


def l6sum(src, dst, nh, seg):
    return csum(ip6a(src) + ip6a(dst) + struct.pack("!IxxxB", len(seg), nh) + seg)


def tcp6(src, sport, dst, dport, flags, seq=1000, ack=0, payload=b""):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0) + payload
    return ipv6(src, dst, 6, seg[:16] + struct.pack("!H", l6sum(src, dst, 6, seg)) + seg[18:])


def udp6(src, sport, dst, dport, payload):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = l6sum(src, dst, 17, seg) or 0xFFFF
    return ipv6(src, dst, 17, seg[:6] + struct.pack("!H", c) + seg[8:])


def icmp6(src, dst, typ, code, rest, payload, hlim=64):
    msg = struct.pack("!BBH", typ, code, 0) + rest + payload
    c = l6sum(src, dst, 58, msg)
    return ipv6(src, dst, 58, msg[:2] + struct.pack("!H", c) + msg[4:], hlim=hlim)


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i // 10, (i % 10) * 100000, len(fr), len(fr)))
            f.write(fr)
    print(f"wrote {path}: {len(frames)} frames")
