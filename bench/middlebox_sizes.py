#!/usr/bin/env python3
"""Throughput of each example middlebox at the six classic frame sizes (the
shape of the ClickOS paper's middlebox figure), beside the 10 Gb/s line rate.

Usage (from the repository root, after `cargo build --release`):

    python3 bench/middlebox_sizes.py                     # every example
    python3 bench/middlebox_sizes.py nat router --runs 5 --packets 400000

For each example `examples/NAME.click` and each size S in 64, 128, 256, 512,
1024, 1500 bytes (frame size on the wire, 4-byte FCS included, as line rates
count it), the example's own trace is rewritten so that every IPv4 frame is
S - 4 bytes long (payload cut or zero-filled; lengths and checksums redone,
deliberately broken checksums stay broken), then repeated to --packets
packets, 1 us apart. The example runs unchanged on it (`pronto run
examples/NAME.click TRACE=... OUT=/dev/null`, its DriverManager made to
print `$(now)` before and after the run); the figure is packets over that
time (configuration excluded). The baseline, in the
same sitting and on the same file, is `FromDump -> Discard`: the cost of
reading the trace, so `mb / read` says how much of the reading rate the
middlebox keeps. Traces go to bench-work/sizes/ and are deleted after use.
Writes a CSV (--csv) and a PNG of it (--png, drawn by `pronto bench plot`).
"""
import argparse, csv, os, statistics, struct, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = [64, 128, 256, 512, 1024, 1500]
# 10 Gb/s line rate in Mpps: 10e9 / ((S + 20 bytes preamble and gap) * 8).
LINE_RATE = {64: 14.88, 128: 8.45, 256: 4.53, 512: 2.35, 1024: 1.20, 1500: 0.81}
# ratelimit.click is left out: it replays its trace in real time (FromDump
# TIMING) and shapes it, so its rate is its configuration's, by design.
EXAMPLES = ["firewall", "stateful-firewall", "nat", "cgnat", "lb", "router", "ids"]


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    out, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return out


def resize(frame, flen):
    """The frame with its IPv4 payload cut or zero-filled to `flen` bytes."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[14] >> 4 != 4:
        return frame
    ihl = (frame[14] & 15) * 4
    ip = frame[14:]
    tot = struct.unpack("!H", ip[2:4])[0]
    if ihl < 20 or tot < ihl or tot > len(ip) or struct.unpack("!H", ip[6:8])[0] & 0x3FFF:
        return frame  # malformed or a fragment: left as it is
    ip_ok = csum(ip[:ihl]) == 0
    proto = ip[9]
    l4 = ip[ihl:tot]
    hlen = {6: (l4[12] >> 4) * 4 if len(l4) >= 20 else len(l4), 17: 8, 1: 8}.get(proto, 0)
    hlen = min(hlen, len(l4))
    want = max(flen - 14 - ihl - hlen, 0)
    body = l4[hlen:]
    body = body[:want] if len(body) >= want else body + bytes(want - len(body))
    seg = bytearray(l4[:hlen] + body)
    newtot = ihl + len(seg)
    hdr = bytearray(ip[:ihl])
    hdr[2:4] = struct.pack("!H", newtot)
    hdr[10:12] = b"\0\0"
    c = csum(bytes(hdr))
    hdr[10:12] = struct.pack("!H", c if ip_ok else c ^ 0x1111)
    pseudo = hdr[12:20] + struct.pack("!BBH", 0, proto, len(seg))
    if proto == 6 and hlen >= 20:
        ok = csum(bytes(pseudo) + bytes(l4)) == 0
        seg[16:18] = b"\0\0"
        c = csum(bytes(pseudo) + bytes(seg))
        seg[16:18] = struct.pack("!H", c if ok else c ^ 0x1111)
    elif proto == 17 and hlen == 8:
        seg[4:6] = struct.pack("!H", len(seg))
        if l4[6:8] != b"\0\0":
            seg[6:8] = b"\0\0"
            c = csum(bytes(pseudo) + bytes(seg)) or 0xFFFF
            seg[6:8] = struct.pack("!H", c)
    elif proto == 1 and hlen == 8:
        ok = csum(bytes(l4)) == 0
        seg[2:4] = b"\0\0"
        c = csum(bytes(seg))
        seg[2:4] = struct.pack("!H", c if ok else c ^ 0x1111)
    out = frame[:14] + bytes(hdr) + bytes(seg)
    return out + bytes(max(60 - len(out), 0))


def write_trace(path, frames, n):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        sec, usec = 1600000000, 0
        for i in range(n):
            fr = frames[i % len(frames)]
            f.write(struct.pack("<IIII", sec, usec, len(fr), len(fr)))
            f.write(fr)
            usec += 1
            if usec == 1000000:
                sec, usec = sec + 1, 0


def timed_copy(conf, dest):
    """A copy of `conf` whose DriverManager also prints the duration of its
    whole instruction list (from before its first instruction to after its
    last) as `BENCHTIME SECONDS`."""
    with open(conf) as f:
        text = f.read()
    start = text.find("DriverManager(")
    if start < 0:
        raise RuntimeError(f"{conf}: no DriverManager to time")
    i = start + len("DriverManager(")
    depth, quote = 1, None
    j = i
    while depth:
        c = text[j]
        if quote:
            if c == "\\":
                j += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        j += 1
    body = text[i:j - 1]
    body = ("set bench_a $(now), " + body.rstrip() +
            ", set bench_b $(now), print \"BENCHTIME\" $(sub $bench_b $bench_a)")
    with open(dest, "w") as f:
        f.write(text[:i] + body + text[j - 1:])
    return dest


def run_time(pronto, conf_args, cwd):
    """Seconds between the first task and the trace's end, as printed."""
    out = subprocess.run([pronto, "run"] + conf_args, cwd=cwd, capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{conf_args}: exit {out.returncode}: {out.stderr.strip()[-400:]}")
    for line in out.stdout.splitlines():
        w = line.split()
        if len(w) == 2 and w[0] == "BENCHTIME":
            return float(w[1])
    raise RuntimeError(f"{conf_args}: no BENCHTIME line in {out.stdout[-300:]!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("examples", nargs="*", default=EXAMPLES)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--packets", type=int, default=500_000)
    ap.add_argument("--pronto", default=os.path.join(ROOT, "target", "release", "pronto"))
    ap.add_argument("--work", default=os.path.join(ROOT, "bench-work", "sizes"))
    ap.add_argument("--csv", default=os.path.join(ROOT, "bench-work", "middlebox_sizes.csv"))
    ap.add_argument("--png", default=os.path.join(ROOT, "bench-work", "middlebox_sizes.png"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    base_conf = os.path.join(a.work, "read.click")
    with open(base_conf, "w") as f:
        f.write("define($TRACE x.pcap);\nFromDump($TRACE, STOP true) -> Discard;\n"
                "DriverManager(wait, print \"done\");\n")
    base_conf = timed_copy(base_conf, base_conf)
    rows = []
    for ex in a.examples:
        conf = os.path.join(ROOT, "examples", ex + ".click")
        pcap = os.path.join(ROOT, "examples", ex + ".pcap")
        if not (os.path.exists(conf) and os.path.exists(pcap)):
            print(f"{ex}: no examples/{ex}.click + .pcap, skipped", file=sys.stderr)
            continue
        frames = read_pcap(pcap)
        timed = timed_copy(conf, os.path.join(ROOT, "examples", f".bench-{ex}.click"))
        try:
            for size in SIZES:
                trace = os.path.join(a.work, f"{ex}-{size}.pcap")
                write_trace(trace, [resize(fr, size - 4) for fr in frames], a.packets)
                defs = [f"TRACE={trace}", "OUT=/dev/null", "LOG=/dev/null"]
                mb, rd = [], []
                for _ in range(a.runs):
                    # Interleaved so that machine noise hits both alike.
                    mb.append(a.packets / run_time(a.pronto, [timed] + defs, ROOT) / 1e6)
                    rd.append(a.packets / run_time(a.pronto, [base_conf, f"TRACE={trace}"], ROOT) / 1e6)
                os.remove(trace)
                m, r = statistics.median(mb), statistics.median(rd)
                rows.append((ex, size, m, r, LINE_RATE[size]))
                print(f"{ex} {size} B: {m:.2f} Mpps (read only {r:.2f}; line rate {LINE_RATE[size]})",
                      file=sys.stderr)
        finally:
            os.remove(timed)
    with open(a.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["example", "frame_bytes", "mpps", "read_only_mpps", "line_rate_10g_mpps"])
        w.writerows(rows)
    print("| middlebox | " + " | ".join(f"{s} B" for s in SIZES) + " |")
    print("|---|" + "---|" * len(SIZES))
    print("| 10 Gb/s line rate | " + " | ".join(f"{LINE_RATE[s]:.2f}" for s in SIZES) + " |")
    for ex in dict.fromkeys(r[0] for r in rows):
        cells = {r[1]: r for r in rows if r[0] == ex}
        print(f"| {ex} | " + " | ".join(
            f"{cells[s][2]:.2f} ({cells[s][2] / cells[s][4]:.1f}× line, "
            f"{cells[s][2] / cells[s][3]:.2f} of read)" if s in cells else "—" for s in SIZES) + " |")
    # The figure: `pronto bench plot` draws it from the CSV (log y axis).
    out = subprocess.run(
        [a.pronto, "bench", "plot", a.csv, a.png,
         "--x", "frame_bytes:frame size (bytes)", "--y", "mpps", "--by", "example",
         "--ref", "line_rate_10g_mpps:10 Gb/s line rate", "--ylabel", "Mpps", "--log-y"],
        capture_output=True, text=True)
    if out.returncode != 0:
        print(f"no PNG: {out.stderr.strip()}", file=sys.stderr)
    else:
        print(out.stdout.strip(), file=sys.stderr)

if __name__ == "__main__":
    main()
