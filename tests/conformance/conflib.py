"""Shared helpers for the make.py generators of conformance cases 20 and up.

Everything here is plain Python (struct + RFC 791/768/793/792 arithmetic); it does
not run pronto.  A make.py builds input.pcap and computes the expected outputs
by modelling each Click element from its documentation and source.

Input traces: classic pcap, microsecond magic, snaplen 65535, linktype 1.
Expected ToDump files: nanosecond magic, snaplen 2000, linktype 1 (what Click's
userlevel ToDump writes); record len = packet length + EXTRA_LENGTH annotation.
"""

import struct

BASE_SEC = 1600000000


# ---------------------------------------------------------------- checksums

def fold(s):
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def sum16(data):
    if len(data) % 2:
        data = data + b"\0"
    return sum(struct.unpack("!%dH" % (len(data) // 2), data))


def cksum(data):
    """RFC 1071 Internet checksum of data (odd length padded with a zero byte)."""
    return ~fold(sum16(data)) & 0xFFFF


def ip_aton(s):
    return bytes(int(x) for x in s.split("."))


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def pseudo_dst(iph):
    """Destination for the pseudo-header: the final hop of an LSRR/SSRR option
    when the header has options (Click's click_in_cksum_pseudohdr)."""
    hl = (iph[0] & 0xF) * 4
    i = 20
    while i < hl:
        o = iph[i]
        if o == 1:
            i += 1
            continue
        if o == 0:
            break
        if i + 1 >= hl or iph[i + 1] < 2 or i + iph[i + 1] > hl:
            break
        if o in (131, 137) and iph[i + 1] >= 7:
            return iph[i + iph[i + 1] - 4:i + iph[i + 1]]
        i += iph[i + 1]
    return iph[16:20]


def l4_cksum(iph, seg, length=None):
    """Checksum of a transport segment (its checksum field already zeroed or
    included) with the IPv4 pseudo-header built from iph."""
    if length is None:
        length = len(seg)
    ph = iph[12:16] + pseudo_dst(iph) + struct.pack("!BBH", 0, iph[9], length)
    return cksum(ph + seg[:length])


def l4_verify(iph, seg, length):
    """0 when the segment's checksum is right."""
    return l4_cksum(iph, seg, length)


# ---------------------------------------------------------------- builders

def ipv4(src, dst, proto, payload, ttl=64, tos=0, ident=0x1234, flags_off=0,
         opts=b"", total_len=None, csum=None, hl=None, version=4):
    if len(opts) % 4:
        opts = opts + b"\0" * (4 - len(opts) % 4)
    ihl = hl if hl is not None else 5 + len(opts) // 4
    tl = total_len if total_len is not None else 20 + len(opts) + len(payload)
    h = bytearray(struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, tos, tl,
                              ident, flags_off, ttl, proto, 0,
                              ip_aton(src), ip_aton(dst)) + opts)
    c = cksum(bytes(h)) if csum is None else csum
    h[10:12] = struct.pack("!H", c)
    return bytes(h) + payload


def tcp(src, dst, sport, dport, payload=b"", seq=1000, ack=0, flags=0x18,
        win=8192, opts=b"", csum=None, iph=None, urp=0):
    """TCP segment; checksum over the pseudo-header of (src, dst) unless csum given.
    iph, if given, is an IP header used for the pseudo-header (source routing)."""
    if len(opts) % 4:
        opts = opts + b"\1" * (4 - len(opts) % 4)
    off = 5 + len(opts) // 4
    seg = bytearray(struct.pack("!HHIIBBHHH", sport, dport, seq, ack, off << 4,
                                flags, win, 0, urp) + opts + payload)
    if csum is None:
        if iph is None:
            iph = ipv4(src, dst, 6, b"")
        csum = l4_cksum(iph, bytes(seg))
    seg[16:18] = struct.pack("!H", csum)
    return bytes(seg)


def udp(src, dst, sport, dport, payload=b"", csum=None, ulen=None, iph=None):
    ln = ulen if ulen is not None else 8 + len(payload)
    seg = bytearray(struct.pack("!HHHH", sport, dport, ln, 0) + payload)
    if csum is None:
        if iph is None:
            iph = ipv4(src, dst, 17, b"")
        c = l4_cksum(iph, bytes(seg), min(ln, len(seg)))
        csum = c if c else 0xFFFF
    seg[6:8] = struct.pack("!H", csum)
    return bytes(seg)


def icmp(typ, code, rest=b"\0\0\0\0", payload=b"", csum=None):
    m = bytearray(struct.pack("!BBH", typ, code, 0) + rest + payload)
    c = cksum(bytes(m)) if csum is None else csum
    m[2:4] = struct.pack("!H", c)
    return bytes(m)


def ether(dst, src, etype, payload, pad=True):
    f = mac(dst) + mac(src) + struct.pack("!H", etype) + payload
    if pad and len(f) < 60:
        f = f + b"\0" * (60 - len(f))
    return f


# Convenient defaults for frames.
HOST_A = "02:00:00:00:00:01"
HOST_B = "02:00:00:00:00:02"


def eth_ip(ip_pkt, dst=HOST_B, src=HOST_A, pad=True):
    return ether(dst, src, 0x0800, ip_pkt, pad=pad)


# ---------------------------------------------------------------- packets

class Pkt:
    """A packet as it travels through the modelled router: its bytes, the
    timestamp annotation (sec, nsec), EXTRA_LENGTH, and header offsets."""

    def __init__(self, data, sec, nsec, extra=0):
        self.data = bytearray(data)
        self.sec = sec
        self.nsec = nsec
        self.extra = extra
        self.nh = None      # network header offset into data (may go negative conceptually)
        self.th = None      # transport header offset
        self.headroom = 0   # bytes stripped off the front (for Unstrip)
        self.dst_anno = b"\0\0\0\0"
        self.paint = 0
        self.anno = bytearray(48)
        self.ptype = 0

    def copy(self):
        q = Pkt(self.data, self.sec, self.nsec, self.extra)
        for k, v in self.__dict__.items():
            if k != "data":
                setattr(q, k, bytearray(v) if isinstance(v, bytearray) else v)
        return q

    # Offsets are kept relative to the current data start.
    def pull(self, n):
        self.data = self.data[n:]
        self.headroom += n
        if self.nh is not None:
            self.nh -= n
        if self.th is not None:
            self.th -= n

    def push(self, hdr):
        n = len(hdr)
        self.data = bytearray(hdr) + self.data
        if self.nh is not None:
            self.nh += n
        if self.th is not None:
            self.th += n

    def unstrip(self, n, stripped):
        """Restore n bytes previously stripped (their original contents)."""
        self.data = bytearray(stripped[len(stripped) - n:]) + self.data
        self.headroom -= n
        if self.nh is not None:
            self.nh += n
        if self.th is not None:
            self.th += n

    def take(self, n):
        if n:
            self.data = self.data[:len(self.data) - n]

    def mark_ip(self, off=0):
        self.nh = off
        self.th = off + (self.data[off] & 0xF) * 4


# ------------------------------------------- rewriting (Click's checksum deltas)

def be16(b, o):
    return struct.unpack("!H", bytes(b[o:o + 2]))[0]


def be32(b, o):
    return struct.unpack("!I", bytes(b[o:o + 4]))[0]


def put16(b, o, v):
    b[o:o + 2] = struct.pack("!H", v & 0xFFFF)


def words(a):
    """The 16-bit words of a byte string (an address: two)."""
    return [be16(a, i) for i in range(0, len(a), 2)]


def upd(c, old, new):
    """RFC 1624 eqn. 3 incremental update of checksum c."""
    s = (~c & 0xFFFF) + (~old & 0xFFFF) + new
    s = (s & 0xFFFF) + (s >> 16)
    return ~(s + (s >> 16)) & 0xFFFF


def upd_words(c, old, new):
    """upd over pairs of words; from 0, the checksum delta of old -> new."""
    for o, n in zip(old, new):
        c = upd(c, o, n)
    return c


def apply_delta(b, off, delta, reply):
    """Applies a rewriter's checksum delta to the checksum at b[off:off + 2]
    (its complement on the forward direction), as Click does; 0 is no
    change."""
    if delta:
        put16(b, off, upd(be16(b, off), 0, delta if reply else ~delta & 0xFFFF))


def plus1(v):
    """Identifier + 1 as the reference computes it on a little-endian host: one is
    added to the wire bytes read in host order."""
    le = struct.unpack("<H", struct.pack("!H", v))[0]
    return struct.unpack("!H", struct.pack("<H", (le + 1) & 0xFFFF))[0]


# ---------------------------------------------------------------- pcap files

def write_input(path, frames):
    """frames: list of bytes, or (bytes, wire_len) for snapped records.
    Packet i gets timestamp BASE_SEC + i*1000 microseconds."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    pkts = []
    for i, f in enumerate(frames):
        if isinstance(f, tuple):
            data, wire = f
        else:
            data, wire = f, len(f)
        usec = i * 1000
        sec = BASE_SEC + usec // 1000000
        usec %= 1000000
        out.append(struct.pack("<IIII", sec, usec, len(data), wire) + data)
        pkts.append(Pkt(data, sec, usec * 1000, wire - len(data)))
    with open(path, "wb") as fh:
        fh.write(b"".join(out))
    return pkts


def write_todump(path, pkts, snaplen=2000):
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen, 1)]
    for p in pkts:
        data = bytes(p.data)
        wire = len(data) + p.extra
        cap = data[:snaplen]
        out.append(struct.pack("<IIII", p.sec, p.nsec, len(cap), wire) + cap)
    with open(path, "wb") as fh:
        fh.write(b"".join(out))


def write_text(path, lines):
    with open(path, "w") as fh:
        fh.write("".join(str(x) + "\n" for x in lines))
