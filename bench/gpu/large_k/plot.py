#!/usr/bin/env python3
"""Joins the large-k CSVs (gknn_large_k_bench, torch_topk.py) into a markdown table of speed-ups and a PNG.

For every shape and k: the milliseconds of each method, and for the fastest gknn selection (sorted, and
unsorted) its speed-up over torch.topk (same sortedness) and over the full segmented sort. Targets of issue 6:
sorted output >= 2x torch.topk for k <= n/10, faster than the full sort up to k = 30% of n.

  python3 bench/gpu/large_k/plot.py [--gknn FILE] [--torch FILE] [--md FILE] [--png FILE]
"""
import argparse
import csv
import os
import sys


def load(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in csv.DictReader(f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gknn", default="bench/results/large_k.csv")
    ap.add_argument("--torch", default="bench/results/large_k_torch.csv")
    ap.add_argument("--md", default="bench/results/large_k_summary.md")
    ap.add_argument("--png", default="bench/results/large_k.png")
    args = ap.parse_args()
    rows = load(args.gknn) + load(args.torch)
    if not rows:
        print(f"plot.py: no data in {args.gknn} or {args.torch}", file=sys.stderr)
        return 2
    ms = {}  # (rows, cols) -> k -> (method, sorted) -> ms
    for r in rows:
        t = float(r["ms"])
        if t > 0:
            ms.setdefault((int(r["rows"]), int(r["cols"])), {}).setdefault(int(r["k"]), {})[(r["method"], r["sorted"] == "1")] = t

    def best(d, sorted_):
        cands = [(t, m) for (m, s), t in d.items() if s == sorted_ and "select" in m]
        return min(cands) if cands else (None, None)

    out = ["| q x n | k | k/n | best sorted (ms) | vs torch sorted | vs full sort | best unsorted (ms) | vs torch unsorted |",
           "|---|---:|---:|---|---:|---:|---|---:|"]
    for (q, n), by_k in sorted(ms.items()):
        for k, d in sorted(by_k.items()):
            bs, ms_ = best(d, True)
            bu, mu = best(d, False)
            ts, tu, full = d.get(("torch_topk", True)), d.get(("torch_topk", False)), d.get(("sort", True))
            ratio = lambda a, b: f"{b / a:.2f}x" if a and b else "-"
            out.append(f"| {q} x {n} | {k} | {k / n:.3f} | {ms_ or '-'} {bs and f'({bs:.3f})' or ''} | {ratio(bs, ts)} | "
                       f"{ratio(bs, full)} | {mu or '-'} {bu and f'({bu:.3f})' or ''} | {ratio(bu, tu)} |")
    with open(args.md, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))
    print(f"wrote {args.md}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed; no PNG (apt-get install python3-matplotlib)", file=sys.stderr)
        return 0
    shapes = sorted(ms)
    fig, axes = plt.subplots(1, len(shapes), figsize=(7 * len(shapes), 5), squeeze=False)
    for ax, (q, n) in zip(axes[0], shapes):
        by_k = ms[(q, n)]
        methods = sorted({m for d in by_k.values() for m in d})
        for (m, s) in methods:
            ks = [k for k in sorted(by_k) if (m, s) in by_k[k]]
            if ks:
                ax.plot([k / n for k in ks], [q * n / (by_k[k][(m, s)] * 1e6) for k in ks],
                        marker="o", linestyle="-" if s else "--", label=f"{m} {'sorted' if s else 'unsorted'}")
        ax.set_xscale("log")
        ax.set_xlabel("k / n")
        ax.set_ylabel("G keys / s")
        ax.set_title(f"q = {q}, n = {n}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
