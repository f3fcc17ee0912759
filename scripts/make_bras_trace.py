#!/usr/bin/env python3
"""Write examples/bras.pcap: what PPPoE subscribers (and one host on the
network) send to the BRAS of examples/bras-trace.click.

A subscriber's frames echo what the server chose: the PADR carries the
PADO's cookie, the LCP Configure-Ack repeats the server's request (its
magic number), the second IPCP request the address the server offered. The
server in the example runs with SEED, so it chooses the same at every run;
this script finds those values by running the example itself: it writes
the trace with what it knows, replays it through `pronto run`, reads the
server's answers, rewrites the frames that depend on them, and repeats
until the trace no longer changes (one round per dependency, about five).

Frames (the comments below number them), 10 ms apart from 1795737600.0:
alice: PADI (Host-Uniq), PADR, LCP Configure-Request (MRU 1492, magic) and
Ack of the server's, PAP, IPCP from 0.0.0.0 and IPv6CP, the Acks of the
server's NCP requests, IPCP and IPv6CP again with what the server offered,
a ping to 10.202.2.1 (answered by frame 12 from the network), a DNS query,
an IPv6 Router Solicitation, an LCP Echo-Request; then frames the server
refuses: a spoofed source, an unknown session, a truncated frame, a packet
from the network for an address no session holds; bob (static address
10.64.0.9, IPv4 only: he rejects IPv6CP with an LCP Protocol-Reject) and a
ping; mallory with a wrong password; alice's PADT.

    PRONTO=target/release/pronto python3 scripts/make_bras_trace.py

Run from the repository root (PRONTO defaults to `cargo run --release`)."""
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tracelib  # noqa: E402
from tracelib import icmp, icmp6, udp  # noqa: E402

START = 1795737600
STEP_US = 10_000
SERVER = bytes.fromhex("0200000001fe")
NET_HOST = bytes.fromhex("020000000201")  # 10.202.2.1 on side B
NET_BRAS = bytes.fromhex("0200000002fe")
ALICE = bytes.fromhex("020000000001")
BOB = bytes.fromhex("020000000002")
MALLORY = bytes.fromhex("020000000003")
BROADCAST = b"\xff" * 6

PADI, PADO, PADR, PADS, PADT = 0x09, 0x07, 0x19, 0x65, 0xA7
LCP, PAP, IPCP, IPV6CP, IPV4, IPV6 = 0xC021, 0xC023, 0x8021, 0x8057, 0x0021, 0x0057
SERVICE_NAME, HOST_UNIQ, AC_COOKIE = 0x0101, 0x0103, 0x0104


def pad(f):
    return f + b"\0" * max(0, 60 - len(f))


def discovery(src, dst, code, sid, tags):
    body = b"".join(struct.pack("!HH", t, len(v)) + v for t, v in tags)
    return pad(dst + src + b"\x88\x63" + struct.pack("!BBHH", 0x11, code, sid, len(body)) + body)


def session(src, sid, protocol, payload):
    body = struct.pack("!H", protocol) + payload
    return pad(SERVER + src + b"\x88\x64" + struct.pack("!BBHH", 0x11, 0, sid, len(body)) + body)


def control(src, sid, protocol, code, ident, data):
    return session(src, sid, protocol, struct.pack("!BBH", code, ident, 4 + len(data)) + data)


def network(ipbytes):
    return pad(NET_BRAS + NET_HOST + b"\x08\x00" + ipbytes)


class Answers:
    """The server's frames to subscribers from the last replay."""

    def __init__(self, frames):
        self.frames = frames

    def find(self, mac, ethertype, code, protocol=None):
        for f in self.frames:
            if f[:6] != mac or f[12:14] != ethertype:
                continue
            if ethertype == b"\x88\x63" and f[15] == code:
                return f
            if ethertype == b"\x88\x64" and struct.unpack("!H", f[20:22])[0] == protocol and f[22] == code:
                return f
        return None

    def tag(self, mac, code, t, default):
        f = self.find(mac, b"\x88\x63", code)
        if f is None:
            return default
        n = struct.unpack("!H", f[18:20])[0]
        body, i = f[20:20 + n], 0
        while i + 4 <= len(body):
            tt, ln = struct.unpack("!HH", body[i:i + 4])
            if tt == t:
                return body[i + 4:i + 4 + ln]
            i += 4 + ln
        return default

    def sid(self, mac, default):
        f = self.find(mac, b"\x88\x63", PADS)
        return struct.unpack("!H", f[16:18])[0] if f else default

    def request(self, mac, protocol, code=1):
        """(identifier, options) of the server's control packet, or a
        stand-in until the server has sent it."""
        f = self.find(mac, b"\x88\x64", 1 if code == 1 else code, protocol)
        if f is None:
            return 0, b""
        n = struct.unpack("!H", f[24:26])[0]
        return f[23], f[26:22 + n]


def subscriber_up(frames, a, mac, user, password, host_uniq, magic, v6):
    """Discovery, LCP, PAP and the NCPs of one subscriber; returns its
    session id and IPv4 address as far as the server has told them."""
    frames.append(discovery(mac, BROADCAST, PADI, 0, [(SERVICE_NAME, b""), (HOST_UNIQ, host_uniq)]))
    cookie = a.tag(mac, PADO, AC_COOKIE, b"\0" * 8)
    frames.append(discovery(mac, SERVER, PADR, 0,
                            [(SERVICE_NAME, b"internet"), (HOST_UNIQ, host_uniq), (AC_COOKIE, cookie)]))
    sid = a.sid(mac, 0)
    mru_magic = bytes([1, 4]) + struct.pack("!H", 1492) + bytes([5, 6]) + struct.pack("!I", magic)
    frames.append(control(mac, sid, LCP, 1, 1, mru_magic))
    ident, opts = a.request(mac, LCP)
    frames.append(control(mac, sid, LCP, 2, ident, opts))
    frames.append(control(mac, sid, PAP, 1, 1, bytes([len(user)]) + user + bytes([len(password)]) + password))
    frames.append(control(mac, sid, IPCP, 1, 1, bytes([3, 6, 0, 0, 0, 0])))
    ident, opts = a.request(mac, IPCP)
    frames.append(control(mac, sid, IPCP, 2, ident, opts))
    if v6:
        frames.append(control(mac, sid, IPV6CP, 1, 1, bytes([1, 10]) + bytes(8)))
        ident, opts = a.request(mac, IPV6CP)
        frames.append(control(mac, sid, IPV6CP, 2, ident, opts))
    else:
        ident, opts = a.request(mac, IPV6CP)
        rejected = struct.pack("!HBBH", IPV6CP, 1, ident, 4 + len(opts)) + opts
        frames.append(control(mac, sid, LCP, 8, 2, rejected))
    _, offer = a.request(mac, IPCP, 3)
    addr = offer[2:6] if len(offer) >= 6 else bytes(4)
    frames.append(control(mac, sid, IPCP, 1, 2, bytes([3, 6]) + addr))
    iid = bytes(8)
    if v6:
        _, offer6 = a.request(mac, IPV6CP, 3)
        iid = offer6[2:10] if len(offer6) >= 10 else bytes(8)
        frames.append(control(mac, sid, IPV6CP, 1, 2, bytes([1, 10]) + iid))
    return sid, ".".join(str(b) for b in addr), iid


def build(a):
    tracelib._ident = 0  # IPv4 identifiers 1, 2, ... in every round
    frames = []
    # 0-10: alice comes up (IPCP and IPv6CP both ways).
    sid, addr, iid = subscriber_up(frames, a, ALICE, b"alice", b"s3cret", b"alice-01", 0xA11CE001, True)
    echo = struct.pack("!HH", 0x4252, 1) + b"pronto-bras-ping" * 3
    # 11: alice pings a host on the network; 12: its reply, from the network.
    frames.append(session(ALICE, sid, IPV4, icmp(addr, "10.202.2.1", 8, 0, echo[:4], echo[4:])))
    frames.append(network(icmp("10.202.2.1", addr, 0, 0, echo[:4], echo[4:])))
    # 13: a DNS query; 14: an IPv6 Router Solicitation from its link-local
    # address (the interface identifier IPv6CP gave); 15: an LCP echo.
    query = bytes.fromhex("1234010000010000000000000770726f6e746f076578616d706c650000010001")
    frames.append(session(ALICE, sid, IPV4, udp(addr, 5353, "10.202.2.1", 53, query)))
    ll = "fe80::" + ":".join("%x" % int.from_bytes(iid[i:i + 2], "big") for i in range(0, 8, 2))
    frames.append(session(ALICE, sid, IPV6, icmp6(ll, "ff02::2", 133, 0, bytes(4), b"", hlim=255)))
    frames.append(control(ALICE, sid, LCP, 9, 7, struct.pack("!I", 0xA11CE001) + b"keepalive"))
    # 16-19, refused and counted: a spoofed source (spoofed_source), data in
    # a session nobody opened (unknown_session), a session frame cut short
    # (its length says 40, 6 bytes follow: malformed), a packet from the
    # network for an address of the pool no session holds (no_session).
    frames.append(session(ALICE, sid, IPV4, icmp("10.64.0.99", "10.202.2.1", 8, 0, echo[:4], echo[4:])))
    frames.append(session(ALICE, 0x0777, IPV4, icmp(addr, "10.202.2.1", 8, 0, echo[:4], echo[4:])))
    frames.append(SERVER + ALICE + b"\x88\x64" + struct.pack("!BBHH", 0x11, 0, sid, 40) + b"\x00\x21\x45\x00")
    frames.append(network(icmp("10.202.2.1", "10.64.0.77", 8, 0, echo[:4], echo[4:])))
    # 20-28: bob, IPv4 only; 29, 30: a ping and its reply.
    bsid, baddr, _ = subscriber_up(frames, a, BOB, b"bob", b"hunter2", b"bob-0002", 0x0B0B0B0B, False)
    frames.append(session(BOB, bsid, IPV4, icmp(baddr, "10.202.2.1", 8, 0, echo[:4], echo[4:])))
    frames.append(network(icmp("10.202.2.1", baddr, 0, 0, echo[:4], echo[4:])))
    # 31-35: mallory's password is wrong (PAP Nak, PADT auth-failed).
    frames.append(discovery(MALLORY, BROADCAST, PADI, 0, [(SERVICE_NAME, b"internet")]))
    cookie = a.tag(MALLORY, PADO, AC_COOKIE, b"\0" * 8)
    frames.append(discovery(MALLORY, SERVER, PADR, 0, [(SERVICE_NAME, b"internet"), (AC_COOKIE, cookie)]))
    msid = a.sid(MALLORY, 0)
    frames.append(control(MALLORY, msid, LCP, 1, 1, bytes([5, 6]) + struct.pack("!I", 0x3A11011)))
    ident, opts = a.request(MALLORY, LCP)
    frames.append(control(MALLORY, msid, LCP, 2, ident, opts))
    frames.append(control(MALLORY, msid, PAP, 1, 1, b"\x07mallory\x05guess"))
    # 36: alice hangs up.
    frames.append(discovery(ALICE, SERVER, PADT, sid, []))
    return frames


def write(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            us = i * STEP_US
            f.write(struct.pack("<IIII", START + us // 1_000_000, us % 1_000_000, len(fr), len(fr)))
            f.write(fr)


def read(path):
    frames = []
    with open(path, "rb") as f:
        data = f.read()
    i = 24
    while i + 16 <= len(data):
        n = struct.unpack("<I", data[i + 8:i + 12])[0]
        frames.append(data[i + 16:i + 16 + n])
        i += 16 + n
    return frames


def main():
    pronto = os.environ.get("PRONTO")
    cmd = [pronto] if pronto else ["cargo", "run", "-q", "--release", "--"]
    answers = Answers([])
    frames = None
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(1, 11):
            new = build(answers)
            if new == frames:
                break
            frames = new
            trace = os.path.join(tmp, "bras.pcap")
            out = os.path.join(tmp, "out.pcap")
            write(trace, frames)
            subprocess.run(cmd + ["run", "--simtime=%d" % START, "examples/bras-trace.click",
                                  "TRACE=" + trace, "OUT=" + out, "NET=" + os.path.join(tmp, "net.pcap"),
                                  "ACCT=" + os.path.join(tmp, "acct.log")],
                           check=True, stdout=subprocess.DEVNULL)
            answers = Answers(read(out))
        else:
            sys.exit("make_bras_trace: the trace did not settle in 10 rounds")
    write("examples/bras.pcap", frames)
    print("wrote examples/bras.pcap: %d frames (settled after %d replays)" % (len(frames), round_ - 1))


if __name__ == "__main__":
    main()
