#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto).

Flows: Click's compressor and decompressor together give back every packet
unchanged as long as the trace avoids what the compressed form cannot carry
(TCP flags other than PSH changing, URG without a new urgent pointer, a
repeated IP ID, Ethernet padding after a TCP packet): whatever CIDs the
compressor picks, a flow is either compressed against the context the
decompressor holds or sent with a full header. So the expected output is the
input's IP packets.

Hand-made frames: decoded with a model of Click's RFC2507Decomp written from
its format (type byte; CID; mask U=0x01 W=0x02 A=0x04 S=0x08 P=0x10 I=0x20;
TCP checksum; deltas urgent, window, ack, sequence, ID, each one nonzero
byte or 0 then two bytes).
"""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def seg(src, dst, sport, dport, n, seq, ack, win, ident, flags=0x10, urp=0, opts=b""):
    payload = bytes((i * 7 + sport) & 0xFF for i in range(n))
    t = tcp(src, dst, sport, dport, payload, seq=seq, ack=ack, flags=flags, win=win, urp=urp, opts=opts)
    return ipv4(src, dst, 6, t, ident=ident, flags_off=0x4000)


def flows():
    """IP packets of 16 flows (more than the 14 contexts) and their replies."""
    out = []
    state = {}
    hosts = [("10.0.0.%d" % (1 + i % 4), "192.0.2.%d" % (10 + i % 3), 40000 + i, 80 + i % 2) for i in range(16)]
    for h in hosts:
        state[h] = [1000 * (hosts.index(h) + 1), 77777, 8192, 300 + hosts.index(h), 0]
    order = [0, 1, 0, 2, 0, 1, 3, 0, 1, 2] * 3 + list(range(16)) + [0, 1, 5, 0, 1, 15, 0, 14, 1, 0]
    for k, i in enumerate(order):
        h = hosts[i]
        s = state[h]
        src, dst, sp, dp = h
        n = 6 + (k * 13) % 90
        flags = 0x18 if k % 3 == 0 else 0x10
        ident = s[3]
        if k % 7 == 3:
            s[2] += 1000            # window grows
        if k % 11 == 5:
            s[2] -= 500             # window shrinks: full header
        if k % 5 == 2:
            s[1] += 300 + k         # ack grows (three-byte form)
        if k % 13 == 7:
            s[0] += 100000          # sequence jump: full header
        if k % 9 == 4:
            s[3] += 40              # ID jump
        opts = b"\x01\x01\x08\x0a" + struct.pack("!II", k, 7) if i == 2 else b""
        out.append(seg(src, dst, sp, dp, n, s[0], s[1], s[2], s[3], flags, opts=opts))
        # The reply, with its own ID sequence.
        out.append(seg(dst, src, dp, sp, 6 + k % 5, s[1], s[0] + n, 4096, 9000 + k))
        s[0] += n
        s[3] += 1
    # Not compressed: SYN, FIN, UDP (padded frame), an IP fragment.
    out.insert(5, ipv4("10.0.0.9", "192.0.2.9", 6, tcp("10.0.0.9", "192.0.2.9", 5, 6, seq=1, flags=0x02)))
    out.insert(20, seg("10.0.0.1", "192.0.2.10", 40000, 80, 8, 1, 2, 3, 4, flags=0x11))
    out.insert(30, ipv4("10.0.0.1", "192.0.2.10", 17, udp("10.0.0.1", "192.0.2.10", 53, 53, b"q")))
    out.insert(40, ipv4("10.0.0.1", "192.0.2.10", 6, tcp("10.0.0.1", "192.0.2.10", 1, 2, b"x" * 16), flags_off=0x2000))
    return out


def hand():
    """(frame payload, expected IP packet or None) pairs."""
    full = seg("172.16.0.1", "172.16.0.2", 1234, 25, 10, 7000, 9000, 1000, 500)
    ctx = bytearray(full[:40])
    items = []
    items.append((b"\x00" + b"passed through unchanged", b"passed through unchanged"))
    items.append((b"\x01\x03" + full, full))

    def decode(mask, csum, deltas, data):
        """Click's RFC2507Decomp on the CID 3 context."""
        h = ctx
        h[36:38] = csum
        d = list(deltas)

        def take():
            b = d.pop(0)
            if b:
                return b
            return (d.pop(0) << 8) | d.pop(0)

        def add(off, size):
            v = int.from_bytes(h[off:off + size], "big")
            v = (v + take()) % (1 << (8 * size))
            h[off:off + size] = v.to_bytes(size, "big")

        h[33] = (h[33] | 0x08) if mask & 0x10 else (h[33] & ~0x08)
        if mask & 0x01:
            h[33] |= 0x20
            add(38, 2)
        else:
            h[33] &= ~0x20
        if mask & 0x02:
            add(34, 2)
        if mask & 0x04:
            add(28, 4)
        if mask & 0x08:
            add(24, 4)
        if mask & 0x20:
            add(4, 2)
        else:
            h[4:6] = ((int.from_bytes(h[4:6], "big") + 1) & 0xFFFF).to_bytes(2, "big")
        assert not d
        h[2:4] = (40 + len(data)).to_bytes(2, "big")
        h[10:12] = b"\0\0"
        h[10:12] = cksum(bytes(h[:20])).to_bytes(2, "big")
        return bytes(h) + data

    for mask, csum, deltas, data in [
        (0x18, b"\x12\x34", [10], b"0123456789"),
        (0x27, b"\xbe\xef", [5, 0, 1, 0, 1, 0, 0x10, 0], b"urgent data"),
        (0x00, b"\xaa\xbb", [], b"plain"),
        (0x0c, b"\x01\x02", [0, 0xff, 0xff, 200], b""),
        (0x02, b"\x00\x00", [0, 0, 1], b"w"),
    ]:
        frame = bytes([2, 3, mask]) + csum + bytes(deltas) + data
        items.append((frame, decode(mask, csum, deltas, data)))
    # Dropped by Click's RFC2507Decomp: too short, unknown type, CID 15.
    items.insert(3, (b"\x00", None))
    items.insert(5, (b"\x05\x03\x00\x00\x00", None))
    items.insert(6, (b"\x01\x0f" + full, None))
    return items


def main():
    fl = flows()
    hd = hand()
    frames = [eth_ip(p) for p in fl]
    frames += [ether(HOST_B, HOST_A, 0x88B5, f, pad=False) for f, _ in hd]
    write_input(os.path.join(HERE, "input.pcap"), frames)
    out_fl, out_hd = [], []
    for p in fl:
        q = Pkt(eth_ip(p)[14:], 1600000000, 0)
        q.data = bytearray(mac("00:00:00:00:00:0b") + mac("00:00:00:00:00:0a") + b"\x08\x00") + q.data
        out_fl.append(q)
    for _, e in hd:
        if e is not None:
            q = Pkt(e, 1600000000, 0)
            q.data = bytearray(mac("00:00:00:00:00:0b") + mac("00:00:00:00:00:0a") + b"\x08\x00") + q.data
            out_hd.append(q)
    write_todump(os.path.join(HERE, "expected_flows.pcap"), out_fl)
    write_todump(os.path.join(HERE, "expected_hand.pcap"), out_hd)


main()
