#!/usr/bin/env python3
"""Generates this case (independent of pronto): input.erf (DAG ERF records:
Ethernet with its 2 pad bytes and a wire length counting the CRC, one
snapped short, Cisco HDLC/PoS, then a record cut short), input.tsh (NLANR
TSH records of the same IPv4 packets: interface number in the top byte of
the microseconds word, the first 36 bytes of the IP packet, one with IP
options) and what ToDump must write from them. ERF timestamps are 32.32
fixed point; the nanoseconds are the fraction rounded half up."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B = "10.0.0.1", "10.0.0.2"


def packets():
    return [
        ipv4(A, B, 6, tcp(A, B, 40000, 80, seq=1000, flags=0x02, win=65535), ident=1),
        ipv4(B, A, 6, tcp(B, A, 80, 40000, b"y" * 200, seq=5000, ack=1001, flags=0x18), ident=2),
        ipv4(A, B, 17, udp(A, B, 7777, 53, b"abcdefgh"), ident=3, opts=bytes([7, 7, 4, 0, 0, 0, 0])),
        ipv4(A, B, 17, udp(A, B, 7777, 53, b"q" * 40), ident=4, ttl=3),
    ]


def frame_ns(frac):
    return (frac * 10**9 + 2**31) >> 32


def todump(path, recs, linktype):
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 2000, linktype)]
    for sec, nsec, data, wire in recs:
        out.append(struct.pack("<IIII", sec, nsec, len(data), wire) + data)
    with open(path, "wb") as fh:
        fh.write(b"".join(out))


def erf(sec, frac, typ, body, wlen):
    return struct.pack("<Q", (sec << 32) | frac) + struct.pack("!BBHHH", typ, 0, 16 + len(body), 0, wlen) + body


def main():
    pkts = packets()
    frames = [eth_ip(p, pad=False) for p in pkts]
    write_input(os.path.join(HERE, "input.pcap"), frames)
    fracs = [0x80000000, 5, 0xFFFFFFFF, 0x12345678]
    erf_out, expect = [], []
    for i, (f, frac) in enumerate(zip(frames, fracs)):
        sec = BASE_SEC + i
        nsec = frame_ns(frac)
        if nsec >= 10**9:
            sec, nsec = sec + 1, nsec - 10**9
        if i == 1:
            # Captured short: 60 bytes of the frame; wire length with CRC.
            erf_out.append(erf(BASE_SEC + i, frac, 2, b"\0\0" + f[:60], len(f) + 4))
            expect.append((sec, nsec, f[:60], len(f)))
        elif i == 3:
            hdlc = bytes([0x0F, 0x00, 0x08, 0x00]) + pkts[i]
            erf_out.append(erf(BASE_SEC + i, frac, 1, hdlc, len(hdlc)))
            expect.append((sec, nsec, hdlc, len(hdlc)))
        else:
            erf_out.append(erf(BASE_SEC + i, frac, 2, b"\0\0" + f, len(f) + 4))
            expect.append((sec, nsec, f, len(f)))
    erf_out.append(erf(BASE_SEC + 9, 0, 2, b"\0\0" + frames[0], 0)[:30])
    with open(os.path.join(HERE, "input.erf"), "wb") as fh:
        fh.write(b"".join(erf_out))
    todump(os.path.join(HERE, "expected_erf.pcap"), expect, 1)

    tsh, plain, opts = [], {0: [], 1: []}, []
    for i, p in enumerate(pkts):
        iface, usec = i % 2, 250000 * i + 7
        cell = (p + b"\0" * 36)[:36]
        tsh.append(struct.pack("!II", BASE_SEC + i, (iface << 24) | usec) + cell)
        rec = (BASE_SEC + i, usec * 1000, cell, 36)
        if (p[0] & 15) != 5:
            opts.append(rec)
        else:
            plain[iface].append(rec)
    with open(os.path.join(HERE, "input.tsh"), "wb") as fh:
        fh.write(b"".join(tsh))
    todump(os.path.join(HERE, "expected_tsh0.pcap"), plain[0], 101)
    todump(os.path.join(HERE, "expected_tsh1.pcap"), plain[1], 101)
    todump(os.path.join(HERE, "expected_tsh_options.pcap"), opts, 101)
    with open(os.path.join(HERE, "expected.txt"), "w") as fh:
        fh.write("ETHER\nIP\n176\n")


main()
