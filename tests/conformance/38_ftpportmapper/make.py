#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def seq_geq(a, b):
    return ((a - b) & 0xFFFFFFFF) < 0x80000000


C1, C2, S, NAT = "1.0.0.2", "1.0.0.3", "2.0.0.2", "10.0.0.1"
OUT_HOST = "02:00:00:00:00:09"


def seg(src, dst, sport, dport, seq, ack, payload=b"", flags=0x18, opts=b""):
    return eth_ip(ipv4(src, dst, 6, tcp(src, dst, sport, dport, payload, seq=seq, ack=ack,
                                        flags=flags, opts=opts)))


def sack(*blocks):
    o = b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(blocks))
    for l, r in blocks:
        o += struct.pack("!II", l, r)
    return o


def frames():
    f = []
    a = lambda *x, **k: f.append(seg(*x, **k))
    # Session 1: 1.0.0.2:6587 -> 2.0.0.2:21, seen as 10.0.0.1:9000.
    a(C1, S, 6587, 21, 1000, 0, flags=0x02)                                  # SYN
    a(S, NAT, 21, 9000, 5000, 1001, flags=0x12)                              # SYN-ACK
    a(C1, S, 6587, 21, 1001, 5001, flags=0x10)
    a(S, NAT, 21, 9000, 5001, 1001, b"220 ready\r\n")
    a(C1, S, 6587, 21, 1001, 5012, b"USER ftp\r\n")                          # 10 bytes
    a(S, NAT, 21, 9000, 5012, 1011, b"331 ok\r\n")
    a(C1, S, 6587, 21, 1011, 5020, b"PORT 1,0,0,2,3,9\r\n")                 # 18 -> 21 bytes
    a(S, NAT, 21, 9000, 5020, 1032, b"200 PORT ok\r\n")                     # acks 1032 -> 1029
    a(C1, S, 6587, 21, 1029, 5033, b"LIST\r\n")                             # 1029 -> 1032
    a(S, "10.0.0.1", 20, 9001, 7000, 0, flags=0x02)                          # data SYN
    a(C1, S, 777, 20, 3000, 7001, flags=0x12)                                # data SYN-ACK
    a(S, NAT, 21, 9000, 5033, 1038, b"150 here\r\n", opts=sack((1030, 1038)))
    a(S, NAT, 21, 9000, 5043, 1035, b"", flags=0x10,
      opts=b"\x01\x01\x08\x0a" + struct.pack("!II", 7, 8))                  # timestamps only
    a(C1, S, 6587, 21, 1035, 5043, b"port  001,000,000,002,004,001\r\n")   # 31 -> 23 bytes
    a(C1, S, 6587, 21, 1066, 5043, b"PORT 1,0,0,2,3,9\n")                  # same data port
    a(C1, S, 6587, 21, 1083, 5043, b"PORT 1,0,0,2,3,256\r\n")              # not a PORT
    a(C1, S, 6587, 21, 1103, 5043, b"NOOP PORT 1,0,0,2,3,9\r\n")           # not first
    a(S, NAT, 21, 9000, 5043, 1070, b"", flags=0x10,
      opts=sack((1058, 1062), (1062, 1070), (1100, 1110)) + b"\x01\x01")
    a(S, NAT, 21, 9000, 5043, 1035, b"", flags=0x10)                         # old ack
    a(S, "10.0.0.1", 20, 9002, 9000, 0, flags=0x02)                          # second data SYN
    # Session 2: the first packet the mapper sees is a PORT command, before any
    # mapping exists: left alone; the next one is rewritten.
    a(C2, S, 7000, 21, 1, 1, b"PORT 1,0,0,3,0,80\r\n")
    a(C2, S, 7000, 21, 20, 1, b"PORT 1,0,0,3,0,81\r\n")
    a(S, NAT, 21, 9003, 1, 42, b"200\r\n")
    f.append(ether(HOST_B, HOST_A, 0x0806, bytes(28)))
    return f


class Flow:
    def __init__(self, key, new):
        self.key = key          # (saddr, sport, daddr, dport) as seen on the inside
        self.new = new          # rewritten
        self.deltas = []        # [(trigger, cumulative delta)], newest first (direction 0)


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {"out": [], "in": []}
    fwd, rev = {}, {}
    nxt = [0]

    def new_flow(key):
        for k in range(5001):
            v = (nxt[0] + k) % 5001
            port = 9000 + v
            rkey = (key[2], key[3], bytes([10, 0, 0, 1]), port)
            if rkey not in rev:
                nxt[0] = v + 1
                fl = Flow(key, (bytes([10, 0, 0, 1]), port, key[2], key[3]))
                fwd[key] = fl
                rev[rkey] = fl
                return fl
        return None

    def ftp(q):
        d = q.data
        ip, th = 14, 14 + (d[14] & 15) * 4
        doff = th + (d[th + 12] >> 4) * 4
        pl = bytes(d[doff:])
        if len(pl) < 5 or pl[:4].upper() != b"PORT" or pl[4:5] != b" ":
            return
        key = (bytes(d[ip + 12:ip + 16]), be16(d, th), bytes(d[ip + 16:ip + 20]), be16(d, th + 2))
        ctl = fwd.get(key)
        if ctl is None:
            return
        pos = 5
        while pos < len(pl) and pl[pos] == 0x20:
            pos += 1
        start = pos
        nums, which = [0] * 6, 0
        while pos < len(pl) and which < 6:
            c = pl[pos]
            if 0x30 <= c <= 0x39:
                nums[which] = (nums[which] * 10 + c - 0x30) & 0xFFFFFFFF
            elif c == 0x2C:
                which += 1
            else:
                break
            pos += 1
        if which != 5 or pos >= len(pl) or pl[pos] not in (0x0D, 0x0A) or max(nums) >= 256:
            return
        dkey = (bytes(nums[:4]), nums[4] * 256 + nums[5], key[2], (key[3] - 1) & 0xFFFF)
        data = fwd.get(dkey) or new_flow(dkey)
        na, np_ = data.new[0], data.new[1]
        arg = ("%d,%d,%d,%d,%d,%d" % (na[0], na[1], na[2], na[3], np_ >> 8, np_ & 255)).encode()
        newpl = pl[:start] + arg + pl[pos:]
        seq = be32(d, th + 4)
        q.data = d[:doff] + newpl
        d = q.data
        old_len = be16(d, ip + 2)
        put16(d, ip + 2, len(d) - ip)
        put16(d, ip + 10, upd(be16(d, ip + 10), old_len, len(d) - ip))
        # newest transition first; its delta is cumulative
        prev = ctl.deltas[0][1] if ctl.deltas else 0
        trig = (seq + len(pl)) & 0xFFFFFFFF
        if ctl.deltas and ctl.deltas[0][0] == trig:
            ctl.deltas[0] = (trig, ctl.deltas[0][1] + len(arg) - (pos - start))
        else:
            ctl.deltas.insert(0, (trig, prev + len(arg) - (pos - start)))
        put16(d, th + 16, 0)
        put16(d, th + 16, l4_cksum(bytes(d[ip:ip + 20]), bytes(d[th:])))

    def new_seq(fl, v):
        for trig, dl in fl.deltas:
            if seq_geq(v, trig):
                return (v + dl) & 0xFFFFFFFF
        return v

    def new_ack(fl, v):
        for trig, dl in fl.deltas:
            if seq_geq((v - dl) & 0xFFFFFFFF, trig):
                return (v - dl) & 0xFFFFFFFF
        return v

    def set_word(d, off, th, new):
        old = be32(d, off)
        c = be16(d, th + 16)
        c = upd(c, old & 0xFFFF, new & 0xFFFF)
        c = upd(c, old >> 16, new >> 16)
        put16(d, th + 16, c)
        d[off:off + 4] = struct.pack("!I", new)

    def do_sack(fl, d, th):
        hlen = (d[th + 12] >> 4) * 4
        begin, end = th + 20, th + min(hlen, len(d) - th)
        delta = 0
        o = begin
        while o < end:
            if d[o] == 0:
                break
            if d[o] == 1:
                o += 1
                continue
            if d[o] == 5:
                ln = d[o + 1]
                if o + ln > end or ln % 8 != 2:
                    break
                es = o + ln
                cb = begin + ((o + 2 - begin) & ~1)
                delta += sum(~w & 0xFFFF for w in words(d[cb:es]))
                for b in range(o + 2, es, 8):
                    for k in (b, b + 4):
                        d[k:k + 4] = struct.pack("!I", new_ack(fl, be32(d, k)))
                delta += sum(words(d[cb:es]))
                o = es
                continue
            if d[o + 1] < 2:
                break
            o += d[o + 1]
        if delta:
            s = (~be16(d, th + 16) & 0xFFFF) + delta
            s = (s & 0xFFFF) + (s >> 16)
            put16(d, th + 16, ~(s + (s >> 16)))

    def apply(q, fl, reply):
        d = q.data
        ip, th = 14, 14 + (d[14] & 15) * 4
        o_sa, o_sp, o_da, o_dp = fl.key
        n_sa, n_sp, n_da, n_dp = fl.new
        dip = 0
        for a, b in zip(words(o_sa + o_da), words(n_sa + n_da)):
            dip = upd(dip, a, b)
        dl4 = upd(upd(dip, o_sp, n_sp), o_dp, n_dp)
        if reply:
            d[ip + 16:ip + 20] = o_sa
            put16(d, th + 2, o_sp)
        else:
            d[ip + 12:ip + 16] = n_sa
            put16(d, th, n_sp)
        for off, dl in ((ip + 10, dip), (th + 16, dl4)):
            if dl:
                put16(d, off, upd(be16(d, off), 0, dl if reply else ~dl & 0xFFFF))
        if not fl.deltas:
            return
        if not reply:
            set_word(d, th + 4, th, new_seq(fl, be32(d, th + 4)))
        else:
            set_word(d, th + 8, th, new_ack(fl, be32(d, th + 8)))
            off = d[th + 12] >> 4
            if off > 8 or (off == 8 and bytes(d[th + 20:th + 24]) != b"\x01\x01\x08\x0a"):
                do_sack(fl, d, th)

    for p in pkts:
        if p.data[12:14] != b"\x08\x00":
            continue
        q = p.copy()
        q.data = q.data[:14 + be16(q.data, 16)]       # CheckIPHeader trims link padding
        d = q.data
        ip, th = 14, 14 + (d[14] & 15) * 4
        src = bytes(d[ip + 12:ip + 16])
        if src[0] == 1:
            ftp(q)
            d = q.data
            key = (src, be16(d, th), bytes(d[ip + 16:ip + 20]), be16(d, th + 2))
            fl = fwd.get(key)
            reply = False
            if fl is None:
                rk = rev.get(key)
                if rk is not None:
                    fl, reply = rk, True
            if fl is None:
                fl = new_flow(key)
            apply(q, fl, reply)
            outs["in" if reply else "out"].append(q)
        else:
            key = (src, be16(d, th), bytes(d[ip + 16:ip + 20]), be16(d, th + 2))
            fl, reply = fwd.get(key), False
            if fl is None:
                fl, reply = rev.get(key), True
            if fl is None:
                continue                                  # input 1 drops unmapped packets
            apply(q, fl, reply)
            outs["in" if reply else "out"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"),
               [len(fwd), 0, "10.0.0.1 9000-14000 - - [%d]" % len(fwd), "<drop>"])


main()
