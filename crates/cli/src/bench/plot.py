"""Draws one line plot from a `pronto bench` CSV.

Usage: python3 -c "$(this file)" CSV PNG TITLE XCOL XLABEL YLABEL YCOL [YCOL...]
A YCOL may be `column:label`. Rows whose x or y is empty are skipped. The
x axis is logarithmic when the largest x is at least 100 times the smallest.
"""
import csv, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

csv_path, png, title, xcol, xlabel, ylabel = sys.argv[1:7]
ycols = sys.argv[7:]
with open(csv_path, newline="") as f:
    rows = list(csv.DictReader(f))

fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
xs_all = []
for spec in ycols:
    col, _, label = spec.partition(":")
    xs, ys = [], []
    for r in rows:
        if r.get(xcol, "") == "" or r.get(col, "") == "":
            continue
        xs.append(float(r[xcol]))
        ys.append(float(r[col]))
    xs_all += xs
    ax.plot(xs, ys, marker="o", label=label or col)
if xs_all and min(xs_all) > 0 and max(xs_all) >= 100 * min(xs_all):
    ax.set_xscale("log", base=2)
ax.set_title(title)
ax.set_xlabel(xlabel)
ax.set_ylabel(ylabel)
ax.set_ylim(bottom=0)
ax.grid(True, alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(png)
