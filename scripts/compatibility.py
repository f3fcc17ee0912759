#!/usr/bin/env python3
"""Writes docs/compatibility.md's class table: every class of Click's default
userlevel build (from scripts/click-classes.py's list) and whether pronto has
it, with the reason where it does not; then pronto's own classes.

    scripts/click-classes.py /path/to/click > /tmp/click-classes.tsv
    scripts/compatibility.py /tmp/click-classes.tsv target/debug/pronto > /tmp/table.md

crates/elements/tests/registry.rs checks the committed table against the
registry, so the document cannot drift from the code.
"""
import subprocess
import sys

NOT_YET = "not yet implemented"
REASONS = {
    "ChangeUID": "not needed: instances already run as an unprivileged user in their sandbox; `pronto run` runs as whoever starts it",
    "KernelHandlerProxy": "not implemented: it reaches the Linux kernel-module driver's handlers, and pronto has no kernel module",
    "KernelFilter": "not implemented: it rewrites the host's iptables rules, which a tenant's middlebox must never touch; pronto's `FromDevice` takes frames with AF_XDP/AF_PACKET and no kernel copy needs dropping under `--switch`",
}


def main():
    rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
    have = set(subprocess.run([sys.argv[2], "elements"], capture_output=True,
                              text=True, check=True).stdout.split())
    aliases = {"EtherVlanEncap", "ICMPSendPings", "SetVlanAnno", "StripEtherVlanHeader"}
    click = set()
    print("| class | Click family | pronto |")
    print("|---|---|---|")
    for name, fam, _req in sorted(rows, key=lambda r: (r[1], r[0])):
        click.add(name)
        if name in have or name in aliases:
            state = "yes" + (" (alias)" if name in aliases else "")
        else:
            state = "no: " + REASONS.get(name, NOT_YET)
        print(f"| {name} | {fam} | {state} |")
    print()
    own = sorted(have - click)
    print("pronto's own classes (not in Click's userlevel build): " +
          ", ".join(f"`{n}`" for n in own) + ".")


if __name__ == "__main__":
    main()
