#!/usr/bin/env python3
"""Plots the scale-out efficiency: the model of gknn_scale_bench (scale_model.csv) per mode and k against P, and
the measured two-GPU runs (scale_2gpu_*.csv) as points; prints the model's efficiency at k = 100.

  python3 bench/scale/plot.py [--results DIR] [--png FILE]
"""
import argparse
import csv
import glob
import os
import sys


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default="bench/results")
    ap.add_argument("--png", default="bench/results/scale.png")
    args = ap.parse_args()
    model_path = os.path.join(args.results, "scale_model.csv")
    if not os.path.exists(model_path):
        sys.exit(f"plot.py: {model_path} not found (run bench/scale/run.sh first)")
    model = load(model_path)
    measured = [r for p in sorted(glob.glob(os.path.join(args.results, "scale_2gpu_*.csv"))) for r in load(p)]
    for r in model:
        if r["k"] == "100":
            print(f'{r["mode"]:<28} P={r["parts"]}: efficiency {100 * float(r["efficiency"]):.1f}%')
    for r in measured:
        print(f'{r["mode"]:<60} k={r["k"]}: efficiency {100 * float(r["efficiency"]):.1f}% ({r["note"]})')
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed; no PNG written", file=sys.stderr)
        return
    modes = sorted({r["mode"] for r in model})
    ks = sorted({int(r["k"]) for r in model})
    fig, axes = plt.subplots(1, len(modes), figsize=(5 * len(modes), 4), sharey=True, squeeze=False)
    for ax, mode in zip(axes[0], modes):
        for k in ks:
            rows = sorted((r for r in model if r["mode"] == mode and int(r["k"]) == k), key=lambda r: int(r["parts"]))
            ax.plot([int(r["parts"]) for r in rows], [100 * float(r["efficiency"]) for r in rows], "o-",
                    label=f"model k={k}")
            kind = "replicated" if mode.startswith("replicated") else "sharded"
            pts = [r for r in measured if int(r["k"]) == k and r["mode"].startswith(kind)]
            if pts:
                ax.plot([int(r["parts"]) for r in pts], [100 * float(r["efficiency"]) for r in pts], "x",
                        markersize=10, label=f"measured k={k}")
        ax.axhline(90, color="grey", linestyle=":", linewidth=1)
        ax.set_title(mode)
        ax.set_xlabel("P (devices or hosts)")
        ax.set_xticks(sorted({int(r["parts"]) for r in model}))
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("efficiency T1 / (P T_P) [%]")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"plot.py: wrote {args.png}")


if __name__ == "__main__":
    main()
