#!/usr/bin/env python3
"""report.py: the benchmark suite's table and heat maps from `gknn bench --sweep --csv` (gknn's timings: every
candidate pair and Auto per cell) and torch_suite.py (torch's time per cell).

Writes OUT_DIR/suite.md (one row per cell: Auto's pair and time, the best pair and time, Auto / best, torch's time
and the speedup of Auto over torch; the worst Auto / best ratio and the speedup quartiles first) and, when
matplotlib is installed, OUT_DIR/suite_<metric>_<data>.png: for each dimension (rows) and k (columns) a heat map
over (n, q) of the speedup of gknn's Auto over torch.
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

CELL = ("metric", "data", "n", "q", "d", "k")


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def cell_of(row):
    return tuple(row[c] if c in ("metric", "data") else int(row[c]) for c in CELL)


def summarise(gknn_rows, torch_rows):
    """cell -> dict(auto_ms, auto_pair, best_ms, best_pair, torch_ms)."""
    out = defaultdict(dict)
    for r in gknn_rows:
        c, ms = cell_of(r), float(r["ms"])
        if r["path"] == "auto":
            out[c].update(auto_ms=ms, auto_pair=f'{r["auto_distance"]}+{r["auto_select"]}')
        elif "best_ms" not in out[c] or ms < out[c]["best_ms"]:
            out[c].update(best_ms=ms, best_pair=f'{r["distance"]}+{r["select"]}')
    for r in torch_rows:
        if r["torch_ms"]:
            out[cell_of(r)]["torch_ms"] = float(r["torch_ms"])
    return {c: v for c, v in out.items() if "auto_ms" in v and "best_ms" in v}


def markdown(cells, device):
    ratios = [v["auto_ms"] / v["best_ms"] for v in cells.values()]
    speedups = [v["torch_ms"] / v["auto_ms"] for v in cells.values() if "torch_ms" in v]
    worst = max(cells.items(), key=lambda kv: kv[1]["auto_ms"] / kv[1]["best_ms"])
    lines = [f"# Benchmark suite ({device})", ""]
    lines.append(f"Cells: {len(cells)}. Worst Auto / best: {max(ratios):.2f} at "
                 + ", ".join(f"{k}={v}" for k, v in zip(CELL, worst[0])) + ".")
    if speedups:
        q = statistics.quantiles(speedups, n=4) if len(speedups) > 1 else speedups * 3
        lines.append(f"Speedup of Auto over torch: min {min(speedups):.2f}, quartiles {q[0]:.2f} / {q[1]:.2f} / "
                     f"{q[2]:.2f}, max {max(speedups):.2f}; slower than torch in "
                     f"{sum(s < 1 for s in speedups)} of {len(speedups)} cells.")
    lines += ["", "| metric | data | n | q | d | k | Auto | Auto ms | best | best ms | Auto / best | torch ms | "
              "speedup |", "|---|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|"]
    for c in sorted(cells):
        v = cells[c]
        torch_ms = f'{v["torch_ms"]:.3f}' if "torch_ms" in v else "—"
        speedup = f'{v["torch_ms"] / v["auto_ms"]:.2f}' if "torch_ms" in v else "—"
        lines.append("| " + " | ".join(str(x) for x in c) + f' | {v["auto_pair"]} | {v["auto_ms"]:.3f} | '
                     f'{v["best_pair"]} | {v["best_ms"]:.3f} | {v["auto_ms"] / v["best_ms"]:.2f} | {torch_ms} | '
                     f"{speedup} |")
    return "\n".join(lines) + "\n"


def heat_maps(cells, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        print("report: matplotlib missing, no heat maps")
        return []
    written = []
    for metric, data in sorted({(c[0], c[1]) for c in cells}):
        mine = {c: v for c, v in cells.items() if c[0] == metric and c[1] == data and "torch_ms" in v}
        if not mine:
            continue
        ns, qs = sorted({c[2] for c in mine}), sorted({c[3] for c in mine})
        ds, ks = sorted({c[4] for c in mine}), sorted({c[5] for c in mine})
        fig, axes = plt.subplots(len(ds), len(ks), figsize=(2.6 * len(ks), 2.2 * len(ds)), squeeze=False)
        for i, d in enumerate(ds):
            for j, k in enumerate(ks):
                grid = np.full((len(ns), len(qs)), np.nan)
                for a, n in enumerate(ns):
                    for b, q in enumerate(qs):
                        v = mine.get((metric, data, n, q, d, k))
                        if v:
                            grid[a, b] = v["torch_ms"] / v["auto_ms"]
                ax = axes[i][j]
                ax.imshow(np.log2(grid), cmap="RdYlGn", vmin=-3, vmax=3, origin="lower", aspect="auto")
                for a in range(len(ns)):
                    for b in range(len(qs)):
                        if not np.isnan(grid[a, b]):
                            ax.text(b, a, f"{grid[a, b]:.1f}", ha="center", va="center", fontsize=7)
                ax.set_xticks(range(len(qs)), [str(q) for q in qs], fontsize=6)
                ax.set_yticks(range(len(ns)), [str(n) for n in ns], fontsize=6)
                ax.set_title(f"d={d} k={k}", fontsize=8)
                if j == 0:
                    ax.set_ylabel("n", fontsize=7)
                if i == len(ds) - 1:
                    ax.set_xlabel("q", fontsize=7)
        fig.suptitle(f"gknn Auto speedup over torch: {metric}, {data} data (green: gknn faster)", fontsize=10)
        fig.tight_layout()
        path = out_dir / f"suite_{metric}_{data}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gknn_csv", help="gknn bench --sweep --csv output")
    ap.add_argument("torch_csv", nargs="?", help="torch_suite.py output (optional)")
    ap.add_argument("--out-dir", default="bench/results")
    args = ap.parse_args()
    gknn_rows = read(args.gknn_csv)
    torch_rows = read(args.torch_csv) if args.torch_csv and Path(args.torch_csv).exists() else []
    cells = summarise(gknn_rows, torch_rows)
    if not cells:
        print(f"report: no complete cell in {args.gknn_csv}", file=sys.stderr)
        return 1
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = gknn_rows[0]["device"]
    (out_dir / "suite.md").write_text(markdown(cells, device))
    print(f"wrote {out_dir / 'suite.md'}")
    for path in heat_maps(cells, out_dir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
