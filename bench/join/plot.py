#!/usr/bin/env python3
"""Plots of the kNN self-join benchmark: time per data set and mode (with cKDTree and the seed's Table 6), the t
sweep, time vs K and CPU-thread scaling when the CSV has them.
    python3 bench/join/plot.py --csv bench/results/join.csv --peer bench/results/join_ckdtree.csv --out bench/results/join
writes join_modes.png, join_t_sweep.png, join_k.png, join_threads.png (those with data)."""
import argparse
import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SEED_TABLE6 = {"UNIF2D": 9.82, "UNIF4D": 19.54, "UNIF6D": 74.50, "EXPO2D": 10.82, "EXPO4D": 22.97, "EXPO6D": 77.21}


def read(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def modes_plot(rows, peer, out):
    sets = sorted({r["set"] for r in rows}, key=lambda s: (s[:4], int(s[4])))
    series = defaultdict(dict)
    for r in rows:
        if int(r["k"]) == 32 and int(r["t"]) == 8 and int(r["threads"]) == 0:
            series[r["mode"]][r["set"]] = float(r["seconds"])
    for r in peer:
        if int(r["k"]) == 32:
            series["cKDTree"][r["set"]] = float(r["seconds"])
    if any(r.get("n") == "10000000" for r in rows):
        series["seed Table 6"] = SEED_TABLE6
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(sorted(series.items())):
        xs = [j + i * width for j, s in enumerate(sets) if s in values]
        ax.bar(xs, [values[s] for s in sets if s in values], width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sets))], sets)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (log)")
    ax.set_title(f"kNN self-join, K = 32, {rows[0]['n']} points")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + "_modes.png", dpi=120)


def line_plot(rows, key, select, out, xlabel, title):
    lines = defaultdict(list)
    for r in rows:
        if select(r):
            lines[(r["set"], r["mode"])].append((int(r[key]), float(r["seconds"])))
    if not lines:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for (s, mode), pts in sorted(lines.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{s} {mode}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="bench/results/join.csv")
    ap.add_argument("--peer", default="bench/results/join_ckdtree.csv")
    ap.add_argument("--out", default="bench/results/join")
    a = ap.parse_args()
    rows, peer = read(a.csv), read(a.peer)
    if not rows:
        raise SystemExit(f"plot.py: no rows in {a.csv}")
    modes_plot(rows, peer, a.out)
    line_plot(rows, "t", lambda r: r["mode"] == "hybrid" and int(r["k"]) == 32 and int(r["threads"]) == 0,
              a.out + "_t_sweep.png", "threads per query t", "t sweep (seed Table 7)")
    line_plot(rows, "k", lambda r: int(r["t"]) == 8 and int(r["threads"]) == 0, a.out + "_k.png", "K", "time vs K")
    line_plot(rows, "threads", lambda r: int(r["threads"]) > 0, a.out + "_threads.png", "CPU threads",
              "CPU-only scaling")
    print(f"wrote {a.out}_*.png")


if __name__ == "__main__":
    main()
