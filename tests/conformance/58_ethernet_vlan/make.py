#!/usr/bin/env python3
"""Generates input.pcap and the expected outputs of this case (independent of pronto)."""
import os, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403


def arp(op=1, hln=6, pln=4, hrd=1, pro=0x0800, body=None):
    a = struct.pack("!HHBBH", hrd, pro, hln, pln, op)
    if body is None:
        body = mac(HOST_A) + ip_aton("10.0.0.1") + bytes(6) + ip_aton("10.0.0.2")
    return a + body


def tagged(tci, inner_type, payload, tpid=0x8100):
    f = mac(HOST_B) + mac(HOST_A) + struct.pack("!HHH", tpid, tci, inner_type) + payload
    return f + b"\0" * max(0, 60 - len(f))


def frames():
    out = []
    u = udp("10.0.0.1", "10.0.0.2", 1000, 2000, b"vlan!")
    ip1 = ipv4("10.0.0.1", "10.0.0.2", 17, u, ident=1)
    # ARP: good request, good reply, truncated, bad hardware length,
    # bad protocol length, IPv6 protocol length 16 (good).
    out.append(ether("ff:ff:ff:ff:ff:ff", HOST_A, 0x0806, arp()))
    out.append(ether(HOST_A, HOST_B, 0x0806, arp(op=2)))
    out.append(ether(HOST_A, HOST_B, 0x0806, arp()[:6], pad=False))
    out.append(ether(HOST_A, HOST_B, 0x0806, arp(hln=5)))
    out.append(ether(HOST_A, HOST_B, 0x0806, arp(pln=3)))
    out.append(ether(HOST_A, HOST_B, 0x0806, arp(pro=0x86DD, pln=16, body=bytes(44))))
    # 802.1Q frames: VLAN 5 PCP 1, VLAN 0 (native: untagged after), VLAN 4095.
    out.append(tagged(0x2005, 0x0800, ip1))
    out.append(tagged(0x0000, 0x0800, ip1))
    out.append(tagged(0xEFFF, 0x0800, ip1))
    # Plain IP.
    for i in range(3):
        out.append(eth_ip(ipv4("10.0.0.1", "10.0.0.%d" % (3 + i), 17,
                               udp("10.0.0.1", "10.0.0.%d" % (3 + i), 7, 9, b"x" * i), ident=10 + i)))
    # Something else.
    out.append(ether(HOST_A, HOST_B, 0x86DD, bytes(40)))
    return out


def vlan_insert(p, tci, tpid=0x8100):
    d = p.data
    p.data = d[:12] + struct.pack("!HH", tpid, tci) + d[12:]
    return p


def main():
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames())
    outs = {k: [] for k in ("arp", "badarp", "requeued", "tagged", "native", "sva")}
    arp_drops = 0
    for p in pkts:
        t = be16(p.data, 12)
        if t == 0x0806:
            # CheckARPHeader(14): 8-byte header, room for the addresses,
            # Ethernet hardware length 6, IPv4 protocol length 4 / IPv6 16.
            a = p.data[14:]
            ok = len(a) >= 8
            if ok:
                hrd, pro, hln, pln = struct.unpack("!HHBB", bytes(a[:6]))
                ok = len(a) >= 8 + 2 * hln + 2 * pln and not (hrd == 1 and hln != 6) \
                    and not ((pro == 0x0800 and pln != 4) or (pro == 0x86DD and pln != 16))
            if ok:
                outs["arp"].append(p)
            else:
                arp_drops += 1
                outs["badarp"].append(p)
        elif t == 0x8100:
            # VLANDecap: remove the shim, annotation = TCI.
            tci = be16(p.data, 14)
            q = p.copy()
            q.data = q.data[:12] + q.data[16:]
            # VLANEncap(ANNO, ETHERTYPE 0x88a8): native VLAN 0 stays untagged.
            if tci & 0xFFF != 0:
                q = vlan_insert(q, tci, 0x88A8)
            outs["requeued"].append(q)
        elif t == 0x0800:
            # VLANEncap(7, 2): TCI 7 | 2 << 13.
            outs["tagged"].append(vlan_insert(p.copy(), 7 | (2 << 13)))
            # StripEtherVLANHeader(3): untagged, so 14 bytes off and TCI 3;
            # EtherVLANEncap with NATIVE_VLAN 3: a plain header; then the
            # source address becomes 1:2:3:4:5:6.
            q = p.copy()
            q.data = mac("0:a:b:c:d:e") + mac("1:2:3:4:5:6") + b"\x08\x00" + q.data[14:]
            outs["native"].append(q)
            # SetVLANAnno(VLAN_ID 9, VLAN_PCP 5) then EtherVLANEncap(ANNO).
            q = p.copy()
            q.data = mac("0:a:b:c:d:e") + mac("0:1:2:3:4:5") + \
                struct.pack("!HHH", 0x8100, 9 | (5 << 13), 0x0800) + q.data[14:]
            outs["sva"].append(q)
    for k, v in outs.items():
        write_todump(os.path.join(HERE, "expected_%s.pcap" % k), v)
    write_text(os.path.join(HERE, "expected.txt"), [
        arp_drops, "ANNO", "ANNO",
        "00-01-02-03-04-05, 00-0A-0B-0C-0D-0E, 2048, ANNO, NATIVE_VLAN 3", "ANNO"])


main()
