#!/usr/bin/env python3
"""Run the Click benchmark configurations under pronto (and, optionally, any
other Click-compatible binary on the same machine in the same sitting) and
print a Markdown table of median Mpps.

Usage (from the repository root, after `cargo build --release`):

    python3 bench/run.py                       # all configs, 5 runs each
    python3 bench/run.py --runs 3 a_inf_discard c_firewall
    python3 bench/run.py --baseline /path/to/click   # adds a column for it
    python3 bench/run.py --runs 25 --baseline /tmp/pronto-old --baseline-is-pronto c_firewall
                                               # an A/B of two pronto builds

The two binaries alternate run by run, so that the machine's noise hits
both; each pair of runs gives one ratio, and the table quotes the median
of those paired ratios with their quartiles (on a shared machine whose
speed drifts by tens of percent, a few percent is only visible that way,
over 20 or more runs).

Data (about 460 MB of pcaps, and 600 MB for IPv6) is generated once into
bench-work/ by gen_bench.py, gen_bench6.py and route_confs.py; nothing
generated is committed. Each configuration prints `PACKETS SECONDS` through
its DriverManager; the figure is PACKETS / SECONDS. The configurations in
bench/conf/ are the shared benchmark's files, unchanged, and pronto's IPv6
twins of some (`*_ip6`, `e_route_LookupIP6Route`: the same traffic with
IPv6 headers), and `d_lb_maglev` (pronto's: d_nat's trace through a
MaglevIPMapper destination NAT to four backends, not run by default);
`--ip6` runs each twin right after its IPv4 original and adds their
cost-per-packet ratio. `g_stateful_firewall` (and its twin
`g_stateful_firewall_ip6`) runs only when named; its session traces come
from gen_stateful.py.
"""
import argparse, csv, os, shutil, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ORDER = ["a_inf_discard", "b_inf_null10", "b_inf_counter10", "c0_dump_discard",
         "c1_dump_checkip", "c_firewall", "d_nat", "e0_route_dump_checkip",
         "e_route_RadixIPLookup", "e_route_DirectIPLookup", "f_classifier_inf",
         "f_classifier_pcap", "f_tee_inf"]
# IPv6 twin -> its IPv4 original (same flows, ports and rules).
TWINS = {"c1_dump_checkip_ip6": "c1_dump_checkip", "c_firewall_ip6": "c_firewall",
         "d_nat_ip6": "d_nat", "d_lb_maglev_ip6": "d_lb_maglev",
         "e0_route_dump_checkip_ip6": "e0_route_dump_checkip",
         "e_route_LookupIP6Route": "e_route_RadixIPLookup",
         "g_stateful_firewall_ip6": "g_stateful_firewall",
         # pronto's own NATs: NAT64 (RFC 6146) on the IPv6 image of the
         # flows CGNAT translates.
         "d_nat64_ip6": "d_cgnat"}
# Figures from shared/bench/README.md (Mpps, median of 5, same machine class).
REFERENCE = {
    "a_inf_discard": (26.9, 24.2), "b_inf_null10": (11.4, 25.3),
    "b_inf_counter10": (1.35, None), "c0_dump_discard": (23.5, 28.3),
    "c1_dump_checkip": (16.9, 21.7), "c_firewall": (9.4, 11.35),
    "d_nat": (3.45, 4.24), "e0_route_dump_checkip": (16.7, 21.5),
    "e_route_RadixIPLookup": (3.55, 7.31), "e_route_DirectIPLookup": (3.37, 10.65),
    "f_classifier_inf": (28.0, 23.7), "f_classifier_pcap": (24.9, 26.0),
    "f_tee_inf": (30.2, 16.7),
}


def prepare(work, packets, ip6, configs=()):
    os.makedirs(work, exist_ok=True)
    shutil.copytree(os.path.join(HERE, "conf"), os.path.join(work, "conf"), dirs_exist_ok=True)
    if not os.path.exists(os.path.join(work, "route.pcap")):
        print("generating traces in", work, "(1-2 minutes)", file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(HERE, "gen_bench.py"), str(packets)],
                       cwd=work, check=True)
    if ip6 and not os.path.exists(os.path.join(work, "route6.pcap")):
        print("generating IPv6 traces in", work, "(2-3 minutes)", file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(HERE, "gen_bench6.py"), str(packets)],
                       cwd=work, check=True)
    if any(c.startswith("g_stateful") for c in configs) and \
            not os.path.exists(os.path.join(work, "sessions6.pcap")):
        subprocess.run([sys.executable, os.path.join(HERE, "gen_stateful.py"), str(packets)],
                       cwd=work, check=True)
    subprocess.run([sys.executable, os.path.join(HERE, "route_confs.py")], cwd=work, check=True)


def run_once(binary, args, conf, work):
    """Returns (Mpps over the timed window, whole-process wall seconds)."""
    t0 = time.perf_counter()
    out = subprocess.run([binary] + args + [os.path.join("conf", conf + ".click")], cwd=work,
                         capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{conf}: exit {out.returncode}: {out.stderr.strip()[-500:]}")
    # The first line starts `PACKETS SECONDS` (some configs print more after).
    words = out.stdout.split()
    packets, seconds = int(words[0]), float(words[1])
    return packets / seconds / 1e6, wall


def quartiles(v):
    """(p25, median, p75) of `v`, by the inclusive method (any length)."""
    if len(v) == 1:
        return (v[0], v[0], v[0])
    q = statistics.quantiles(v, n=4, method="inclusive")
    return (q[0], statistics.median(v), q[2])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*", default=ORDER)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pronto", default=os.path.join(ROOT, "target", "release", "pronto"))
    ap.add_argument("--baseline", help="another Click-compatible binary to measure alongside")
    ap.add_argument("--baseline-is-pronto", action="store_true",
                    help="the baseline is a pronto binary (run as `BASELINE run CONF`)")
    ap.add_argument("--work", default=os.path.join(ROOT, "bench-work"))
    ap.add_argument("--packets", type=int, default=3_000_000)
    ap.add_argument("--csv", help="also write the results as CSV here")
    ap.add_argument("--ip6", action="store_true",
                    help="run each configuration's IPv6 twin after it and print the cost ratio")
    a = ap.parse_args()
    configs = list(a.configs)
    if a.ip6:
        for twin, orig in TWINS.items():
            if orig in configs and twin not in configs:
                configs.insert(configs.index(orig) + 1, twin)
    prepare(a.work, a.packets, a.ip6 or any(c in TWINS for c in configs), configs)
    rows = []
    for conf in configs:
        p, pw, b, bw = [], [], [], []
        for _ in range(a.runs):
            # Interleave the two binaries so that machine noise hits both.
            m, w = run_once(a.pronto, ["run"], conf, a.work)
            p.append(m)
            pw.append(w)
            if a.baseline:
                m, w = run_once(a.baseline, ["run"] if a.baseline_is_pronto else [], conf, a.work)
                b.append(m)
                bw.append(w)
        pm, pwm = statistics.median(p), statistics.median(pw)
        bm = statistics.median(b) if b else None
        bwm = statistics.median(bw) if bw else None
        click, fast = REFERENCE.get(conf, (None, None))
        paired = quartiles([x / y for x, y in zip(p, b)]) if b else None
        rows.append((conf, pm, bm, click, fast, pwm, bwm, paired))
        print(f"{conf}: pronto {pm:.2f} Mpps ({pwm:.2f} s whole run)"
              + (f", baseline {bm:.2f} Mpps ({bwm:.2f} s)" if bm else ""), file=sys.stderr)
    fmt = lambda v: f"{v:.2f}" if v is not None else "—"
    ratio = lambda x, y: f"{x / y:.2f}×" if (x and y) else "—"
    head = "| config | pronto Mpps |"
    rule = "|---|---|"
    if a.baseline:
        head += (" baseline Mpps | pronto / baseline | paired ratios, p25 / median / p75 |"
                 " whole-run time, pronto / baseline |")
        rule += "---|---|---|---|"
    head += " FastClick ref. Mpps | pronto / FastClick ref. |"
    rule += "---|---|"
    print(head)
    print(rule)
    for conf, pm, bm, click, fast, pwm, bwm, paired in rows:
        line = f"| {conf} | {fmt(pm)} |"
        if a.baseline:
            q = " / ".join(f"{v:.3f}" for v in paired) if paired else "—"
            line += f" {fmt(bm)} | {ratio(pm, bm)} | {q} | {fmt(pwm)} s / {fmt(bwm)} s |"
        line += f" {fmt(fast)} | {ratio(pm, fast)} |"
        print(line)
    measured = {r[0]: r[1] for r in rows}
    twins = [(t, o) for t, o in TWINS.items() if t in measured and o in measured]
    if twins:
        print()
        print("| IPv6 twin | IPv4 original | cost per packet, IPv6 / IPv4 |")
        print("|---|---|---|")
        for t, o in twins:
            print(f"| {t} | {o} | {measured[o] / measured[t]:.2f}× |")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["config", "pronto_mpps", "baseline_mpps", "click_ref", "fastclick_ref",
                        "pronto_wall_s", "baseline_wall_s", "ratio_p25", "ratio_median",
                        "ratio_p75"])
            w.writerows(r[:7] + (r[7] if r[7] else ("", "", "")) for r in rows)

if __name__ == "__main__":
    main()
