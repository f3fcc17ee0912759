#!/usr/bin/env python3
"""Lists the element classes of Click's default userlevel build, from a Click
source tree: one line per class, `NAME<TAB>FAMILY<TAB>REQUIRES`.

    scripts/click-classes.py /path/to/click > click-classes.tsv

The userlevel build (with IPv6, `--enable-ip6`) compiles the families below and leaves out the
classes that need a kernel module, the ns simulator,
DPDK, netmap, multithreading or are disabled (`false`). The list
feeds docs/compatibility.md (scripts/compatibility.py); it reads Click's
headers and exports only, it builds nothing.
"""
import os
import re
import sys

FAMILIES = ["standard", "ip", "ip6", "icmp", "tcpudp", "ethernet", "analysis", "app",
            "aqm", "simple", "threads", "userlevel"]
LEFT_OUT = {"linuxmodule", "bsdmodule", "ns", "dpdk", "netmap", "false",
            "multithread", "smpclick", "batch"}


def main():
    root = sys.argv[1]
    rows = []
    for fam in FAMILIES:
        d = os.path.join(root, "elements", fam)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".cc"):
                continue
            cc = open(os.path.join(d, f), errors="replace").read()
            hh_path = os.path.join(d, f[:-3] + ".hh")
            hh = open(hh_path, errors="replace").read() if os.path.exists(hh_path) else ""
            req = " ".join(re.findall(r"^ELEMENT_REQUIRES\((.*)\)", cc, re.M))
            alts = [set(a.split("|")) for a in req.split()]
            if any(a <= LEFT_OUT for a in alts if a):
                continue
            for export in re.findall(r"^EXPORT_ELEMENT\(([^)]*)\)", cc, re.M):
                # `Class` or `Class-Name` (an alias), several per line.
                for tok in export.split():
                    cls, _, alias = tok.partition("-")
                    if alias:
                        rows.append((alias, fam, req or "-"))
                        continue
                    # The Click name: class_name() in the declaration.
                    m = re.search(r"class\s+" + cls + r"\b[^;{]*\{(.*?)\n\};", hh, re.S)
                    body = m.group(1) if m else hh
                    n = re.search(r'class_name\(\)\s*const\s*(?:override\s*)?\{\s*return\s*"(\w+)"', body)
                    rows.append((n.group(1) if n else cls, fam, req or "-"))
    for r in sorted(set(rows)):
        print("\t".join(r))


if __name__ == "__main__":
    main()
