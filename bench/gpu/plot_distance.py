#!/usr/bin/env python3
"""Plots each distance stage against its ceilings (issue 12): gknn_gpu_bench's CSV -> one horizontal bar group per
(distance path, shape, k) with the fraction of the path's arithmetic ceiling and of HBM bandwidth (0..1).

  python3 bench/gpu/plot_distance.py --csv gpu_bench.csv [--png gpu_bench_distance.png] [--all-variants]
                                     [--configs sift1m,sift1m_float]

Of the rows of one (distance, config, k) -- one per selection -- the one with the fastest distance stage is drawn.
The benchmark's variants ('auto-nomerge', 'auto-qtiles2', 'tf32-noguard', ...: a '-' in the name) are left out
unless --all-variants. The table is printed either way; without matplotlib no PNG is written (the script says so),
and the CSV can be plotted later on a machine that has it. The model behind the columns: bench/gpu/ceilings.hpp.
"""
import argparse
import csv
import os
import sys

NUMERIC = ("nb", "nq", "dim", "k", "wall_ms", "distance_ms", "select_ms", "arith_ops", "min_bytes",
           "arith_floor_ms", "hbm_floor_ms", "floor_ms", "arith_fraction", "hbm_fraction")
REQUIRED = ("config", "distance", "path", "unit", "k", "distance_ms", "arith_fraction", "hbm_fraction")


def load(path):
    """The CSV's rows with numbers converted; rows without fractions (a ceiling not measured) are counted apart.
    Returns (rows, skipped)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a gknn_gpu_bench ceilings CSV (missing columns: {', '.join(missing)})")
        rows, skipped = [], 0
        for r in reader:
            if not r["arith_fraction"] or not r["hbm_fraction"]:
                skipped += 1
                continue
            for c in NUMERIC:
                if c in r and r[c] != "":
                    r[c] = float(r[c]) if c not in ("nb", "nq", "dim", "k") else int(r[c])
            rows.append(r)
    return rows, skipped


def is_variant(distance):
    return "-" in distance


def aggregate(rows, all_variants=False, configs=None):
    """One entry per (distance, config, k), in the CSV's order: its row with the fastest distance stage."""
    best, order = {}, []
    for r in rows:
        if not all_variants and is_variant(r["distance"]):
            continue
        if configs and r["config"] not in configs:
            continue
        key = (r["distance"], r["config"], r["k"])
        if key not in best:
            order.append(key)
            best[key] = r
        elif r["distance_ms"] < best[key]["distance_ms"]:
            best[key] = r
    return [best[k] for k in order]


def label(r):
    name = r["distance"] if r["distance"] == r["path"] else f'{r["distance"]} ({r["path"]})'
    shape = (f'{r["config"]}: n={r.get("nb", "?")}, q={r.get("nq", "?")}, d={r.get("dim", "?")}, k={r["k"]}, '
             f'{r.get("dtype", "?")} {r.get("metric", "?")}')
    return f'{name} [{r["unit"]}] | {shape} | {r["distance_ms"]:.3g} ms, floor {r.get("floor_ms", 0):.3g} ms'


def print_table(groups, skipped):
    print(f'{"distance (path)":<28} {"config":<16} {"k":>6} {"unit":<12} {"ms":>9} {"floor ms":>9} '
          f'{"arith":>7} {"hbm":>7}  selection')
    for r in groups:
        name = r["distance"] if r["distance"] == r["path"] else f'{r["distance"]} ({r["path"]})'
        print(f'{name:<28} {r["config"]:<16} {r["k"]:>6} {r["unit"]:<12} {r["distance_ms"]:>9.3f} '
              f'{r.get("floor_ms", 0):>9.3f} {100 * r["arith_fraction"]:>6.1f}% {100 * r["hbm_fraction"]:>6.1f}%  '
              f'{r.get("selection", "")}')
    if skipped:
        print(f"({skipped} row(s) without fractions left out: a ceiling was not measured)")


def plot(groups, png, title):
    """Writes the PNG; returns False (with a message) when matplotlib is absent."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_distance.py: matplotlib is not installed; no PNG written "
              "(apt-get install python3-matplotlib, or run this script on the CSV elsewhere)", file=sys.stderr)
        return False
    n = len(groups)
    fig, ax = plt.subplots(figsize=(13, 1.2 + 0.42 * n))
    ys = list(range(n))
    h = 0.38
    arith = [r["arith_fraction"] for r in groups]
    hbm = [r["hbm_fraction"] for r in groups]
    ax.barh([y - h / 2 for y in ys], arith, height=h, color="tab:blue", label="of the arithmetic ceiling")
    ax.barh([y + h / 2 for y in ys], hbm, height=h, color="tab:orange", label="of HBM bandwidth")
    top = max([1.0] + arith + hbm)
    for y, a, b in zip(ys, arith, hbm):
        ax.text(a + 0.01 * top, y - h / 2, f"{100 * a:.1f}%", va="center", fontsize=7)
        ax.text(b + 0.01 * top, y + h / 2, f"{100 * b:.1f}%", va="center", fontsize=7)
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(ys)
    ax.set_yticklabels([label(r) for r in groups], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.12)
    ax.set_xlabel("measured distance stage: fraction of the ceiling (floor time / measured time)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", required=True, help="gknn_gpu_bench's ceilings CSV (--csv, default beside --out)")
    ap.add_argument("--png", help="output PNG (default: the CSV's name with _distance.png)")
    ap.add_argument("--all-variants", action="store_true", help="also the auto-nomerge/-qtiles/-noguard variants")
    ap.add_argument("--configs", help="comma-separated configurations to draw (default: all)")
    args = ap.parse_args(argv)
    if not os.path.exists(args.csv):
        sys.exit(f"plot_distance.py: {args.csv} not found (gknn_gpu_bench --csv writes it)")
    rows, skipped = load(args.csv)
    groups = aggregate(rows, args.all_variants, set(args.configs.split(",")) if args.configs else None)
    if not groups:
        sys.exit(f"plot_distance.py: no rows with fractions in {args.csv}")
    print_table(groups, skipped)
    png = args.png or os.path.splitext(args.csv)[0] + "_distance.png"
    if plot(groups, png, f"Distance stage vs. its ceilings ({os.path.basename(args.csv)})"):
        print(f"plot_distance.py: wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
