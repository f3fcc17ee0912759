#!/usr/bin/env python3
"""A PPPoE client for crates/cli/tests/bras.rs, built on scapy's own
protocol layers (PPPoED, PPPoE, PPP, LCP, PAP, CHAP, IPCP, IPv6CP).

This kernel has no /dev/ppp, so pppd cannot run: this client does the
discovery and the PPP negotiation itself over a raw AF_PACKET socket, then
gives ping and iperf3 a real interface: a TUN device carrying the
IPCP-assigned address, relayed to and from the PPPoE session.

    pppoe_client.py IFACE USER SECRET pap|chap TUN STATUS_FILE

Prints progress on stderr; writes `up ADDRESS SESSION` to STATUS_FILE once
IPCP is open, and `padt CAUSE` when the server ends the session (then
exits 0). Exits 1 with a message when a step times out.
"""

import fcntl
import hashlib
import os
import select
import socket
import struct
import subprocess
import sys
import time

from scapy.layers.l2 import Ether
from scapy.layers.ppp import (
    PPP,
    PPP_CHAP_ChallengeResponse,
    PPP_IPCP,
    PPP_IPCP_Option_IPAddress,
    PPP_LCP_Configure,
    PPP_LCP_Echo,
    PPP_LCP_MRU_Option,
    PPP_LCP_Magic_Number_Option,
    PPP_PAP_Request,
    PPPoE,
    PPPoED,
    PPPoED_Tags,
    PPPoETag,
)
from scapy.packet import Raw

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def log(*a):
    print("pppoe_client:", *a, file=sys.stderr, flush=True)


def main():
    iface, user, secret, auth, tun_name, status = sys.argv[1:7]
    user, secret = user.encode(), secret.encode()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    mac = s.getsockname()[4]
    my_mac = ":".join("%02x" % b for b in mac)

    def recv(timeout):
        """The next PPPoE frame (scapy Ether) within `timeout` seconds."""
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([s], [], [], left)
            if not r:
                return None
            data, addr = s.recvfrom(4096)
            if addr[2] == PACKET_OUTGOING or len(data) < 14:
                continue
            if data[12:14] in (b"\x88\x63", b"\x88\x64"):
                return Ether(data)

    def fail(what):
        log("timed out waiting for", what)
        sys.exit(1)

    # Discovery.
    host_uniq = os.urandom(4)
    padi = Ether(dst="ff:ff:ff:ff:ff:ff", src=my_mac) / PPPoED(code=0x09) / PPPoED_Tags(
        tag_list=[PPPoETag(tag_type=0x0101, tag_value=b""), PPPoETag(tag_type=0x0103, tag_value=host_uniq)]
    )
    s.send(bytes(padi))
    while True:
        f = recv(5) or fail("PADO")
        if PPPoED in f and f[PPPoED].code == 0x07:
            break
    ac = f.src
    tags = {t.tag_type: t.tag_value for t in f[PPPoED_Tags].tag_list}
    log("PADO from", ac, "AC-Name", tags.get(0x0102))
    padr = Ether(dst=ac, src=my_mac) / PPPoED(code=0x19) / PPPoED_Tags(
        tag_list=[
            PPPoETag(tag_type=0x0101, tag_value=tags.get(0x0101, b"")),
            PPPoETag(tag_type=0x0103, tag_value=host_uniq),
            PPPoETag(tag_type=0x0104, tag_value=tags[0x0104]),
        ]
    )
    s.send(bytes(padr))
    while True:
        f = recv(5) or fail("PADS")
        if PPPoED in f and f[PPPoED].code == 0x65:
            break
    sid = f[PPPoED].sessionid
    if sid == 0:
        log("PADS refused the session")
        sys.exit(1)
    log("session", sid)

    def send_ppp(layer):
        s.send(bytes(Ether(dst=ac, src=my_mac, type=0x8864) / PPPoE(sessionid=sid) / layer))

    magic = struct.unpack("!I", os.urandom(4))[0] | 1
    send_ppp(PPP(proto=0xC021) / PPP_LCP_Configure(code=1, id=1, options=[
        PPP_LCP_MRU_Option(max_recv_unit=1492), PPP_LCP_Magic_Number_Option(magic_number=magic)]))
    state = {"lcp_ours": False, "lcp_theirs": False, "auth": False, "addr": None,
             "ipcp_ours": False, "ipcp_theirs": False, "v6_ours": False, "v6_theirs": False}
    sent_auth = False
    sent_ipcp = False

    def control(f):
        """Answers one control frame; returns False on PADT."""
        nonlocal sent_auth, sent_ipcp
        if PPPoED in f:
            if f[PPPoED].code == 0xA7:
                cause = b""
                if PPPoED_Tags in f:
                    for t in f[PPPoED_Tags].tag_list:
                        if t.tag_type == 0x0203:
                            cause = t.tag_value
                log("PADT", cause)
                with open(status, "a") as out:
                    out.write("padt %s\n" % cause.decode(errors="replace"))
                return False
            return True
        if f[PPPoE].sessionid != sid:
            return True
        raw = bytes(f[PPPoE].payload)[: f[PPPoE].len]
        proto = struct.unpack("!H", raw[:2])[0]
        body = raw[2:]
        code, ident = body[0], body[1]
        if proto == 0xC021:
            if code == 1:  # Configure-Request: take it as it is
                state["lcp_theirs"] = True
                send_ppp(PPP(proto=0xC021) / Raw(bytes([2]) + body[1:]))
            elif code == 2 and ident == 1:
                state["lcp_ours"] = True
            elif code == 9:
                send_ppp(PPP(proto=0xC021) / PPP_LCP_Echo(code=10, id=ident, magic_number=magic, data=body[8:]))
        elif proto == 0xC023 and code == 2:
            state["auth"] = True
        elif proto == 0xC023 and code == 3:
            log("PAP refused:", body)
            sys.exit(1)
        elif proto == 0xC223:
            ch = PPP_CHAP_ChallengeResponse(body)
            if ch.code == 1:
                resp = hashlib.md5(bytes([ch.id]) + secret + ch.value).digest()
                send_ppp(PPP(proto=0xC223) / PPP_CHAP_ChallengeResponse(
                    code=2, id=ch.id, value=resp, optional_name=user))
            elif ch.code == 3:
                state["auth"] = True
            elif ch.code == 4:
                log("CHAP refused")
                sys.exit(1)
        elif proto == 0x8021:
            ipcp = PPP_IPCP(body)
            if code == 1:
                state["ipcp_theirs"] = True
                send_ppp(PPP(proto=0x8021) / Raw(bytes([2]) + body[1:]))
            elif code == 3:
                for o in ipcp.options:
                    if isinstance(o, PPP_IPCP_Option_IPAddress):
                        state["addr"] = o.data
                send_ppp(PPP(proto=0x8021) / PPP_IPCP(code=1, id=3, options=[
                    PPP_IPCP_Option_IPAddress(data=state["addr"])]))
            elif code == 2:
                state["ipcp_ours"] = True
        elif proto == 0x8057:
            if code == 1:
                state["v6_theirs"] = True
                send_ppp(PPP(proto=0x8057) / Raw(bytes([2]) + body[1:]))
            elif code == 3:
                send_ppp(PPP(proto=0x8057) / Raw(bytes([1, 5, 0, 14]) + body[4:14]))
            elif code == 2:
                state["v6_ours"] = True
        if state["lcp_ours"] and state["lcp_theirs"] and not sent_auth:
            sent_auth = True
            if auth == "pap":
                send_ppp(PPP(proto=0xC023) / PPP_PAP_Request(id=1, username=user, password=secret))
        if state["auth"] and not sent_ipcp:
            sent_ipcp = True
            send_ppp(PPP(proto=0x8021) / PPP_IPCP(code=1, id=2, options=[
                PPP_IPCP_Option_IPAddress(data="0.0.0.0")]))
            send_ppp(PPP(proto=0x8057) / Raw(bytes([1, 4, 0, 14, 1, 10]) + bytes(8)))
        return True

    end = time.time() + 15
    while not (state["ipcp_ours"] and state["ipcp_theirs"] and state["v6_ours"] and state["v6_theirs"]):
        if time.time() > end:
            fail("PPP negotiation: %r" % state)
        f = recv(1)
        if f is not None and not control(f):
            sys.exit(0)
    addr = state["addr"]
    log("up", addr)

    # The TUN device the kernel routes through.
    tun = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", tun_name.encode(), IFF_TUN | IFF_NO_PI))
    # No IPv6 of the kernel's own on it (router solicitations would be
    # counted as the session's traffic).
    subprocess.run(["sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % tun_name], check=True)
    for cmd in (["ip", "addr", "add", addr + "/32", "dev", tun_name],
                ["ip", "link", "set", tun_name, "mtu", "1492", "up"],
                ["ip", "route", "add", "default", "dev", tun_name]):
        subprocess.run(cmd, check=True)
    with open(status, "a") as out:
        out.write("up %s %d\n" % (addr, sid))
    head = bytes(Ether(dst=ac, src=my_mac, type=0x8864))[:14]
    while True:
        r, _, _ = select.select([s, tun], [], [], 1)
        if tun in r:
            ip = os.read(tun, 2048)
            v = ip[0] >> 4
            proto = b"\x00\x21" if v == 4 else b"\x00\x57"
            s.send(head + struct.pack("!BBHH", 0x11, 0, sid, len(ip) + 2) + proto + ip)
        if s in r:
            data, a = s.recvfrom(4096)
            if a[2] == PACKET_OUTGOING or len(data) < 22:
                continue
            if data[12:14] == b"\x88\x64" and struct.unpack("!H", data[16:18])[0] == sid \
                    and data[20:22] in (b"\x00\x21", b"\x00\x57"):
                n = struct.unpack("!H", data[18:20])[0]
                os.write(tun, data[22:20 + n])
            elif data[12:14] in (b"\x88\x63", b"\x88\x64"):
                if not control(Ether(data)):
                    sys.exit(0)


if __name__ == "__main__":
    main()
