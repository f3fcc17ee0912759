#!/usr/bin/env python3
"""Generates config.click, input.pcap and the expected outputs of this case
(independent of pronto): an IPFilter of a few hundred generated rules.

Each rule is built from primitives that carry both their IPFilter text and a
Python predicate over the packet's fields; the expected output of a packet is
the action of the first rule whose predicates all hold (IPFilter's
first-match semantics; ports, ICMP types and TCP flags only on first
fragments)."""
import os, random, struct, sys
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conflib import *  # noqa: E402,F403

N_RULES = 300
N_PACKETS = 700
rng = random.Random(55)


def aton(s):
    return struct.unpack("!I", ip_aton(s))[0]


def ntoa(a):
    return ".".join(str((a >> s) & 255) for s in (24, 16, 8, 0))


def first_frag(p):
    return (p["frag"] & 0x1FFF) == 0


# ---------------------------------------------------------------- primitives
# Each: (text, predicate, hint) where hint(p) nudges packet fields so that
# the predicate likely holds.

BASES = ["10.0.0.0", "10.1.0.0", "172.16.0.0", "192.168.0.0", "93.184.0.0", "8.8.0.0"]


def rand_net(lens):
    ln = rng.choice(lens)
    base = aton(rng.choice(BASES)) | rng.getrandbits(16)
    m = (0xFFFFFFFF << (32 - ln)) & 0xFFFFFFFF
    return base & m, ln


def net_atom(dirn, lens):
    a, ln = rand_net(lens)
    m = (0xFFFFFFFF << (32 - ln)) & 0xFFFFFFFF
    text = "%s host %s" % (dirn, ntoa(a)) if ln == 32 else "%s net %s/%d" % (dirn, ntoa(a), ln)
    inside = lambda x: (x & m) == a
    pick = lambda: a | (rng.getrandbits(32) & ~m & 0xFFFFFFFF)
    if dirn == "src":
        pred = lambda p: inside(p["src"])
        hint = lambda p: p.update(src=pick())
    elif dirn == "dst":
        pred = lambda p: inside(p["dst"])
        hint = lambda p: p.update(dst=pick())
    else:  # src or dst
        pred = lambda p: inside(p["src"]) or inside(p["dst"])
        hint = lambda p: p.update(**{rng.choice(["src", "dst"]): pick()})
    return text, pred, hint


PORTS = [22, 25, 53, 80, 123, 161, 443, 993, 3306, 8080]


def rand_port():
    return rng.choice(PORTS) if rng.random() < 0.7 else rng.randrange(1, 65536)


OPS = {
    "": lambda a, b: a == b,
    "!= ": lambda a, b: a != b,
    "< ": lambda a, b: a < b,
    "> ": lambda a, b: a > b,
    "<= ": lambda a, b: a <= b,
    ">= ": lambda a, b: a >= b,
}


def port_atom(proto, dirn, op, v):
    text = "%s%s port %s%d" % (proto + " " if proto else "", dirn, op, v)
    protos = {"tcp": (6,), "udp": (17,), "": (6, 17)}[proto]
    cmp = OPS[op]
    if dirn == "src or dst":
        side = lambda p: cmp(p["sport"], v) or cmp(p["dport"], v)
    else:
        side = lambda p: cmp(p["sport" if dirn == "src" else "dport"], v)
    pred = lambda p: p["proto"] in protos and first_frag(p) and side(p)

    def hint(p):
        p["proto"] = rng.choice(protos)
        key = "dport" if dirn != "src" else "sport"
        p[key] = min(65535, max(0, v + rng.choice([0, 0, 0, -1, 1])))
    return text, pred, hint


def range_atom(proto):
    lo = rand_port()
    hi = min(65535, lo + rng.randrange(0, 200))
    protos = {"tcp": (6,), "udp": (17,)}[proto]
    text = "%s dst port >= %d and %s dst port <= %d" % (proto, lo, proto, hi)
    pred = lambda p: p["proto"] in protos and first_frag(p) and lo <= p["dport"] <= hi
    hint = lambda p: p.update(proto=protos[0], dport=rng.randrange(lo, hi + 1))
    return text, pred, hint


def proto_atom(name, num):
    return name, (lambda p: p["proto"] == num), (lambda p: p.update(proto=num))


def icmp_type_atom():
    name, t = rng.choice([("echo", 8), ("echo-reply", 0), ("unreachable", 3), ("11", 11)])
    pred = lambda p: p["proto"] == 1 and first_frag(p) and p["itype"] == t
    hint = lambda p: p.update(proto=1, itype=t)
    return "icmp type " + name, pred, hint


def tcp_opt_atom():
    name, bit = rng.choice([("syn", 0x02), ("ack", 0x10), ("fin", 0x01), ("rst", 0x04)])
    pred = lambda p: p["proto"] == 6 and first_frag(p) and (p["flags"] & bit) != 0
    hint = lambda p: p.update(proto=6, flags=p["flags"] | bit)
    return "tcp opt " + name, pred, hint


def misc_atom():
    k = rng.randrange(4)
    if k == 0:
        return "ip frag", (lambda p: (p["frag"] & 0x3FFF) != 0), (lambda p: p.update(frag=0x2000))
    if k == 1:
        return "ip unfrag", (lambda p: (p["frag"] & 0x3FFF) == 0), (lambda p: p.update(frag=0))
    if k == 2:
        t = rng.choice([10, 32, 64, 100])
        return "ip ttl < %d" % t, (lambda p: p["ttl"] < t), (lambda p: p.update(ttl=t - 1))
    v = rng.choice([0, 0x10, 0x20])
    return "ip tos %d" % v, (lambda p: p["tos"] == v), (lambda p: p.update(tos=v))


def negate(atom):
    text, pred, _ = atom
    return "not (%s)" % text, (lambda p: not pred(p)), (lambda p: None)


def either(a, b):
    return ("(%s) or (%s)" % (a[0], b[0]), (lambda p: a[1](p) or b[1](p)),
            (lambda p: rng.choice([a, b])[2](p)))


def firewall_rule():
    """The usual shapes: protocol, port or port range, nets."""
    k = rng.randrange(10)
    if k < 4:
        return [port_atom("tcp", "dst", "", rand_port()), net_atom("dst", [16, 24, 24, 28, 32])]
    if k < 5:
        return [range_atom("udp"), net_atom("src", [8, 16, 24]), net_atom("dst", [16, 24])]
    if k < 6:
        return [net_atom("src", [12, 16, 24, 32]), port_atom("", "dst", "", rand_port())]
    if k < 7:
        return [net_atom("dst", [24, 28, 32])]
    if k < 8:
        return [proto_atom("icmp", 1), icmp_type_atom(), net_atom("dst", [16, 24])]
    if k < 9:
        return [proto_atom("tcp", 6), net_atom("src", [8, 16, 24]), net_atom("dst", [24, 32])]
    return [net_atom("src or dst", [24, 32]), proto_atom("udp", 17)]


def odd_rule():
    """Shapes that need more than per-field lookups."""
    k = rng.randrange(7)
    if k == 0:
        return [port_atom("tcp", "dst", "", rand_port()), tcp_opt_atom()]
    if k == 1:
        return [negate(net_atom("src", [8, 16])), port_atom("udp", "dst", "", rand_port())]
    if k == 2:
        return [either(port_atom("tcp", "dst", "", rand_port()), port_atom("udp", "src", "", rand_port()))]
    if k == 3:
        op = rng.choice(["!= ", "< ", "> ", "<= ", ">= "])
        return [port_atom(rng.choice(["tcp", "udp", ""]), rng.choice(["src", "dst"]), op, rand_port()),
                net_atom("dst", [16, 24])]
    if k == 4:
        return [misc_atom(), net_atom("dst", [16, 24])]
    if k == 5:
        return [port_atom("", "src or dst", "", rand_port()), negate(proto_atom("udp", 17))]
    return [net_atom("src", [16, 24]), negate(either(proto_atom("tcp", 6), icmp_type_atom()))]


def rules():
    out = []
    for _ in range(N_RULES):
        atoms = firewall_rule() if rng.random() < 0.8 else odd_rule()
        act = rng.choices(["allow", "deny", "1", "2"], [50, 26, 14, 10])[0]
        out.append((act, atoms))
    return out


# ---------------------------------------------------------------- packets

def rand_addr():
    if rng.random() < 0.5:
        return aton(rng.choice(BASES)) | rng.getrandbits(16)
    return rng.getrandbits(32)


def fields():
    return {
        "proto": rng.choice([6, 6, 6, 17, 17, 1, 47]),
        "src": rand_addr(), "dst": rand_addr(),
        "sport": rand_port(), "dport": rand_port(),
        "itype": rng.choice([8, 0, 3, 11]), "flags": rng.choice([0x02, 0x10, 0x12, 0x18, 0x11]),
        "frag": rng.choices([0, 0x4000, 0x2000, 0x00B9, 0x20B9], [80, 8, 4, 5, 3])[0],
        "ttl": rng.choice([5, 30, 64, 128]), "tos": rng.choice([0, 0, 0x10, 0x20]),
        "opts": b"" if rng.random() < 0.9 else b"\x01\x01\x01\x00",
    }


def build(p):
    src, dst = ntoa(p["src"]), ntoa(p["dst"])
    if p["proto"] == 6:
        l4 = tcp(src, dst, p["sport"], p["dport"], b"data", flags=p["flags"])
    elif p["proto"] == 17:
        l4 = udp(src, dst, p["sport"], p["dport"], b"query")
    elif p["proto"] == 1:
        l4 = icmp(p["itype"], 0, b"\0\1\0\2", b"ping")
    else:
        l4 = b"\0\0\x08\x00" + b"gre-payload"
    return eth_ip(ipv4(src, dst, p["proto"], l4, ttl=p["ttl"], tos=p["tos"],
                       flags_off=p["frag"], opts=p["opts"]))


def parse(data):
    """The fields IPFilter reads, back from the frame bytes."""
    ip = data[14:]
    hl = (ip[0] & 15) * 4
    tr = ip[hl:]
    return {
        "proto": ip[9], "src": struct.unpack("!I", ip[12:16])[0],
        "dst": struct.unpack("!I", ip[16:20])[0],
        "frag": struct.unpack("!H", ip[6:8])[0], "ttl": ip[8], "tos": ip[1],
        "sport": struct.unpack("!H", tr[0:2])[0], "dport": struct.unpack("!H", tr[2:4])[0],
        "itype": tr[0], "flags": tr[13] if len(tr) > 13 else 0,
    }


def main():
    rs = rules()
    frames = []
    for i in range(N_PACKETS):
        p = fields()
        if i % 2 == 0:
            _, atoms = rs[rng.randrange(len(rs))]
            for a in atoms:
                a[2](p)
        frames.append(build(p))
    pkts = write_input(os.path.join(HERE, "input.pcap"), frames)

    outs = {"0": [], "1": [], "2": []}
    for q in pkts:
        f = parse(bytes(q.data))
        action = "deny"  # the final `deny all`
        for act, atoms in rs:
            if all(a[1](f) for a in atoms):
                action = act
                break
        if action != "deny":
            outs["0" if action == "allow" else action].append(q)
    write_todump(os.path.join(HERE, "expected_allow.pcap"), outs["0"])
    write_todump(os.path.join(HERE, "expected_one.pcap"), outs["1"])
    write_todump(os.path.join(HERE, "expected_two.pcap"), outs["2"])
    write_text(os.path.join(HERE, "expected.txt"),
               [len(outs["0"]), len(outs["1"]), len(outs["2"])])

    lines = ["// IPFilter with %d generated rules (make.py): nets of varied prefix lengths," % (N_RULES + 1),
             "// protocols, ports and port ranges, ICMP types, TCP flags, negations, `or`,",
             "// fragments; first match wins, `deny all` last. Generated by make.py.",
             "src :: FromDump(input.pcap, STOP true);",
             "f :: IPFilter("]
    for act, atoms in rs:
        lines.append("  %s %s," % (act, " and ".join("(%s)" % a[0] for a in atoms)))
    lines.append("  deny all);")
    lines += ["src -> Classifier(12/0800) -> MarkIPHeader(14) -> f;",
              "f[0] -> c0 :: Counter -> ToDump(output_allow.pcap);",
              "f[1] -> c1 :: Counter -> ToDump(output_one.pcap);",
              "f[2] -> c2 :: Counter -> ToDump(output_two.pcap);",
              "DriverManager(wait, print c0.count, print c1.count, print c2.count);"]
    with open(os.path.join(HERE, "config.click"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


main()
