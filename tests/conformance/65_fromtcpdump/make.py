#!/usr/bin/env python3
"""Generates this case (independent of pronto): input.pcap, input.txt (what
this machine's tcpdump prints for it with -n -tt -v; the file is kept, so
the case runs without tcpdump) and expected_headers.pcap: each IPv4
packet's headers as captured, checksums zeroed, record length the IP
length (FromTcpdump's packets hold headers only; the rest is extra
length)."""
import os, struct, subprocess, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

A, B, C = "10.0.0.1", "10.0.0.2", "192.168.7.9"


def packets():
    syn_opts = bytes([2, 4, 5, 0xB4, 1, 3, 3, 7, 4, 2, 8, 10]) + struct.pack("!II", 7000, 0)
    sack = bytes([1, 1, 5, 10]) + struct.pack("!II", 90101, 90201)
    ts = lambda a, b: bytes([1, 1, 8, 10]) + struct.pack("!II", a, b)
    return [
        ipv4(A, B, 6, tcp(A, B, 40000, 80, seq=1000, flags=0x02, win=65535, opts=syn_opts), ident=11, flags_off=0x4000),
        ipv4(B, A, 6, tcp(B, A, 80, 40000, seq=90000, ack=1001, flags=0x12, win=28960,
                          opts=bytes([2, 4, 5, 0xB4, 1, 1, 4, 2])), ttl=63, ident=900, flags_off=0x4000),
        ipv4(A, B, 6, tcp(A, B, 40000, 80, seq=1001, ack=90001, flags=0x10, win=502, opts=ts(7001, 500)), ident=12, flags_off=0x4000),
        ipv4(A, B, 6, tcp(A, B, 40000, 80, b"GET / HTTP/1.0\r\n\r\n", seq=1001, ack=90001, flags=0x18, win=502),
             tos=0x10, ident=13, flags_off=0x4000),
        ipv4(B, A, 6, tcp(B, A, 80, 40000, b"x" * 300, seq=90001, ack=1019, flags=0x18, win=235), ttl=63, ident=901, flags_off=0x4000),
        ipv4(A, B, 6, tcp(A, B, 40000, 80, seq=1019, ack=90001, flags=0x10, win=502, opts=sack), ident=14, flags_off=0x4000),
        ipv4(B, A, 6, tcp(B, A, 80, 40000, seq=90301, ack=1019, flags=0x11, win=235), ttl=63, ident=902, flags_off=0x4000),
        ipv4(A, C, 17, udp(A, C, 7777, 9999, b"abcdefghij"), ttl=17, ident=77),
        ipv4(C, A, 17, udp(C, A, 9999, 7777, b"z" * 100), ttl=250, ident=78, tos=0x03),
    ]


def headers(p):
    ihl = (p[0] & 15) * 4
    th = ihl + ((p[ihl + 12] >> 4) * 4 if p[9] == 6 else 8)
    h = bytearray(p[:th])
    h[10:12] = b"\0\0"
    at = ihl + (16 if p[9] == 6 else 6)
    h[at:at + 2] = b"\0\0"
    return bytes(h)


def main():
    pkts = packets()
    recs = write_input(os.path.join(HERE, "input.pcap"), [eth_ip(p, pad=False) for p in pkts])
    txt = os.path.join(HERE, "input.txt")
    try:
        out = subprocess.run(["tcpdump", "-n", "-tt", "-v", "-r", os.path.join(HERE, "input.pcap")],
                             check=True, capture_output=True).stdout
        with open(txt, "wb") as fh:
            fh.write(out)
    except FileNotFoundError:
        print("tcpdump not installed; keeping input.txt", file=sys.stderr)
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 2000, 101)]
    for p, r in zip(pkts, recs):
        h = headers(p)
        out.append(struct.pack("<IIII", r.sec, r.nsec, len(h), len(p)) + h)
    with open(os.path.join(HERE, "expected_headers.pcap"), "wb") as fh:
        fh.write(b"".join(out))


main()
