#!/usr/bin/env python3
"""report.py: the benchmark suite's table and heat maps from `gknn bench --sweep --csv` (gknn's timings: every
candidate pair and Auto per cell) and torch_suite.py (torch's time per cell).

Writes OUT_DIR/suite.md (one row per cell: Auto's pair and time, the best pair and time, Auto / best, torch's time
and the speedup of Auto over torch; the worst Auto / best ratio and the speedup quartiles first; then the fused
kernel's gain over the best two-stage pair where issue 13 sets a target) and, when
matplotlib is installed, OUT_DIR/suite_<metric>_<data>.png: for each dimension (rows) and k (columns) a heat map
over (n, q) of the speedup of gknn's Auto over torch.

The suite is measured in slices (run.sh --budget), so the grid may be partial: the grid (--grid-n, ... as given to
the sweep; by default every value seen in the CSV) decides which cells there should be, the Markdown counts and
names the missing ones, the heat maps show them grey, and the ratios and quartiles cover the measured cells only.
One device per report (--device, by default the one with the most rows): a cell measured on another card is not
compared with these. --auto-from FILE (a `gknn bench --sweep --sweep-auto-only --csv` file) replaces the Auto times
of the cells it holds: Auto re-checked after the planner changed, without re-measuring every pair; with the best
pair's own line beside Auto's (--sweep-best-from), its best time too.
"""
import argparse
import csv
import itertools
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

CELL = ("metric", "data", "n", "q", "d", "k")


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def cell_of(row):
    return tuple(row[c] if c in ("metric", "data") else int(row[c]) for c in CELL)


def main_device(gknn_rows):
    """The device with the most rows: the card the suite was measured on."""
    return Counter(r["device"] for r in gknn_rows).most_common(1)[0][0]


def summarise(gknn_rows, torch_rows):
    """cell -> dict(auto_ms, auto_pair, best_ms, best_pair, capped, skipped, torch_ms) for the complete cells (those
    with their auto row) of the rows given (one device's). A candidate with runs 0 was skipped as hopeless (capped in
    a smaller cell, not run; its ms is an estimate): counted apart, never the best."""
    out = defaultdict(lambda: {"capped": 0, "skipped": 0})
    for r in gknn_rows:
        c, ms = cell_of(r), float(r["ms"])
        if r["path"] == "auto":
            out[c].update(auto_ms=ms, auto_pair=f'{r["auto_distance"]}+{r["auto_select"]}')
            continue
        if r["runs"] == "0":
            out[c]["skipped"] += 1
            continue
        out[c]["capped"] += r.get("capped") == "1"
        if "best_ms" not in out[c] or ms < out[c]["best_ms"]:
            out[c].update(best_ms=ms, best_pair=f'{r["distance"]}+{r["select"]}')
    for r in torch_rows:
        if r["torch_ms"]:
            out[cell_of(r)]["torch_ms"] = float(r["torch_ms"])
    return {c: v for c, v in out.items() if "auto_ms" in v and "best_ms" in v}


def recheck_auto(cells, auto_rows):
    """Replaces the Auto time and pair of the cells that `gknn bench --sweep --sweep-auto-only` timed again (its auto
    lines, one device's): today's Auto against the best pairs the full sweep recorded; where it also timed that pair
    beside Auto (--sweep-best-from: a candidate line), that time replaces the best one too, so that the ratio compares
    two medians of one duel rather than Auto with the least of a dozen short medians. Returns (cells whose Auto was
    replaced, cells whose best was)."""
    replaced = dueled = 0
    for r in auto_rows:
        c = cell_of(r)
        if c not in cells:
            continue
        if r["path"] == "auto":
            cells[c].update(auto_ms=float(r["ms"]), auto_pair=f'{r["auto_distance"]}+{r["auto_select"]}')
            replaced += 1
        elif r["runs"] != "0":
            cells[c].update(best_ms=float(r["ms"]), best_pair=f'{r["distance"]}+{r["select"]}')
            dueled += 1
    return replaced, dueled


def grid_cells(grid):
    """Every cell of the grid (a dict of CELL name -> values), but those with k > n, which the sweep skips."""
    return {c for c in itertools.product(*(grid[name] for name in CELL)) if c[5] <= c[2]}


def seen_grid(gknn_rows):
    """The grid the rows come from, as far as they show it: every value seen for each of CELL."""
    cells = [cell_of(r) for r in gknn_rows]
    return {name: sorted({c[i] for c in cells}) for i, name in enumerate(CELL)}


def missing_summary(missing):
    """Lines that name the missing cells: each one when they are few, else counted per (metric, data, n, d)."""
    if len(missing) <= 8:
        return ["Missing: " + "; ".join(", ".join(f"{k}={v}" for k, v in zip(CELL, c)) for c in sorted(missing))
                + "."]
    groups = Counter(c[:3] + c[4:5] for c in missing)
    return ["Missing per (metric, data, n, d): " + "; ".join(f"{m} {dt} n={n} d={d}: {count}"
                                                              for (m, dt, n, d), count in sorted(groups.items()))
            + "."]


def markdown(cells, device, expected, other_devices=(), auto_note=None):
    """The report. `expected`: the cells of the grid; those not in `cells` are counted and named as missing;
    `auto_note`: where the Auto times come from when they were re-checked (recheck_auto)."""
    ratios = [v["auto_ms"] / v["best_ms"] for v in cells.values()]
    speedups = [v["torch_ms"] / v["auto_ms"] for v in cells.values() if "torch_ms" in v]
    worst = max(cells.items(), key=lambda kv: kv[1]["auto_ms"] / kv[1]["best_ms"])
    missing = expected - set(cells)
    lines = [f"# Benchmark suite ({device})", ""]
    lines.append(f"Cells: {len(cells)} of {len(expected | set(cells))} measured, {len(missing)} missing "
                 "(bench/suite/run.sh --budget measures the grid in slices; grey in the heat maps).")
    if missing:
        lines += missing_summary(missing)
    if other_devices:
        lines.append("Not in this report (other devices): " + ", ".join(other_devices) + ".")
    if auto_note:
        lines.append(auto_note)
    lines.append(f"Worst Auto / best over the measured cells: {max(ratios):.2f} at "
                 + ", ".join(f"{k}={v}" for k, v in zip(CELL, worst[0])) + ".")
    capped = sum(v["capped"] for v in cells.values())
    lines.append(f"Capped candidates (timed once: their first call was past the cap times the cell's best): {capped}.")
    skipped = sum(v["skipped"] for v in cells.values())
    lines.append(f"Skipped as hopeless (capped in a smaller cell: not run, time estimated): {skipped}.")
    if speedups:
        q = statistics.quantiles(speedups, n=4) if len(speedups) > 1 else speedups * 3
        lines.append(f"Speedup of Auto over torch: min {min(speedups):.2f}, quartiles {q[0]:.2f} / {q[1]:.2f} / "
                     f"{q[2]:.2f}, max {max(speedups):.2f}; slower than torch in "
                     f"{sum(s < 1 for s in speedups)} of the {len(speedups)} cells with a torch time.")
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


# Issue 13's targets for the fused kernel: at least this many times faster than the best two-stage pair of the same
# cell at q >= FUSED_MIN_Q (integer data, where it runs): (which cells, gain, their name).
FUSED_TARGETS = ((lambda d, k: d <= 32 and k <= 64, 1.5, "d <= 32, k <= 64"),
                 (lambda d, k: d == 128 and k <= 32, 1.2, "d = 128, k <= 32"))
FUSED_MIN_Q = 8192


def fused_gains(gknn_rows):
    """cell -> (fused ms, best two-stage ms, that pair) where the fused kernel and another distance path were both
    timed as candidates. A capped time (one slow call) counts; a skipped one (runs 0: an estimate) does not."""
    fused, other = {}, {}
    for r in gknn_rows:
        if r["path"] != "candidate" or r["runs"] == "0":
            continue
        c, ms = cell_of(r), float(r["ms"])
        if r["distance"] == "fused":
            fused[c] = min(ms, fused.get(c, ms))
        elif c not in other or ms < other[c][0]:
            other[c] = (ms, f'{r["distance"]}+{r["select"]}')
    return {c: (fused[c],) + other[c] for c in fused if c in other}


def fused_section(gains):
    """The report's lines on FUSED_TARGETS: per target the cells it covers, the least gain, and a row per cell."""
    lines = ["", "## The fused kernel against the best two-stage pair (issue 13)", ""]
    rows = []
    for applies, target, name in FUSED_TARGETS:
        region = {c: g for c, g in gains.items() if c[3] >= FUSED_MIN_Q and applies(c[4], c[5])}
        if not region:
            lines.append(f"- {name}, q >= {FUSED_MIN_Q}: no cell with both timed yet (target {target}x).")
            continue
        least = min(region.items(), key=lambda kv: kv[1][1] / kv[1][0])
        lines.append(f"- {name}, q >= {FUSED_MIN_Q}: {len(region)} cells, the least gain "
                     f"{least[1][1] / least[1][0]:.2f}x (target {target}x) at "
                     + ", ".join(f"{k}={v}" for k, v in zip(CELL, least[0])) + ".")
        rows += sorted(region.items())
    if rows:
        lines += ["", "| metric | data | n | q | d | k | fused ms | best two-stage | its ms | gain |",
                  "|---|---|---:|---:|---:|---:|---:|---|---:|---:|"]
        lines += ["| " + " | ".join(str(x) for x in c) + f" | {f:.3f} | {pair} | {ms:.3f} | {ms / f:.2f} |"
                  for c, (f, ms, pair) in rows]
    return "\n".join(lines) + "\n"


def panel(cells, metric, data, d, k, ns, qs):
    """One heat-map panel over (n, q): the speedup of Auto over torch, "no torch" where gknn measured the cell but
    torch has no time, None where the cell is not measured yet."""
    def value(n, q):
        v = cells.get((metric, data, n, q, d, k))
        if v is None:
            return None
        return v["torch_ms"] / v["auto_ms"] if "torch_ms" in v else "no torch"
    return [[value(n, q) for q in qs] for n in ns]


def heat_maps(cells, grid, out_dir):
    """One PNG per (metric, data) of the grid: a panel per (d, k) over the grid's (n, q), unmeasured cells grey."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        print("report: SKIPPED heat maps: matplotlib is not installed for this python3")
        return []
    written = []
    ns, qs, ds, ks = grid["n"], grid["q"], grid["d"], grid["k"]
    for metric, data in itertools.product(grid["metric"], grid["data"]):
        fig, axes = plt.subplots(len(ds), len(ks), figsize=(2.6 * len(ks), 2.2 * len(ds)), squeeze=False)
        colours = plt.get_cmap("RdYlGn").copy()
        colours.set_bad("lightgrey")  # NaN: not measured yet, or no torch time
        for i, d in enumerate(ds):
            for j, k in enumerate(ks):
                values = panel(cells, metric, data, d, k, ns, qs)
                speedup = np.array([[v if isinstance(v, float) else np.nan for v in row] for row in values])
                ax = axes[i][j]
                ax.imshow(np.log2(speedup), cmap=colours, vmin=-3, vmax=3, origin="lower", aspect="auto")
                for a, row in enumerate(values):
                    for b, v in enumerate(row):
                        if v is not None:
                            ax.text(b, a, f"{v:.1f}" if isinstance(v, float) else v, ha="center", va="center",
                                    fontsize=7 if isinstance(v, float) else 5)
                ax.set_xticks(range(len(qs)), [str(q) for q in qs], fontsize=6)
                ax.set_yticks(range(len(ns)), [str(n) for n in ns], fontsize=6)
                ax.set_title(f"d={d} k={k}", fontsize=8)
                if j == 0:
                    ax.set_ylabel("n", fontsize=7)
                if i == len(ds) - 1:
                    ax.set_xlabel("q", fontsize=7)
        fig.suptitle(f"gknn Auto speedup over torch: {metric}, {data} data (green: gknn faster; grey: not "
                     "measured yet)", fontsize=10)
        fig.tight_layout()
        path = out_dir / f"suite_{metric}_{data}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def numbers(text):
    return [int(v) for v in text.split(",")]


def names(text):
    return text.split(",")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gknn_csv", help="gknn bench --sweep --csv output")
    ap.add_argument("torch_csv", nargs="?", help="torch_suite.py output (optional)")
    ap.add_argument("--out-dir", default="bench/results")
    ap.add_argument("--device", help="the device to report (default: the one with the most rows)")
    ap.add_argument("--auto-from", help="a `gknn bench --sweep --sweep-auto-only --csv` file: its Auto times replace "
                    "those of the cells it has (today's Auto against the best pairs recorded earlier)")
    for name, kind in (("n", numbers), ("q", numbers), ("d", numbers), ("k", numbers), ("metric", names),
                       ("data", names)):
        ap.add_argument(f"--grid-{name}", type=kind, help=f"the grid's {name} values, comma-separated "
                        "(default: those seen in the CSV)")
    args = ap.parse_args(argv)
    if not Path(args.gknn_csv).exists():
        print(f"report: {args.gknn_csv} does not exist (no cell measured yet)", file=sys.stderr)
        return 1
    all_rows = read(args.gknn_csv)
    if not all_rows:
        print(f"report: no timing in {args.gknn_csv}", file=sys.stderr)
        return 1
    device = args.device or main_device(all_rows)
    gknn_rows = [r for r in all_rows if r["device"] == device]
    others = sorted({r["device"] for r in all_rows} - {device})
    torch_rows = read(args.torch_csv) if args.torch_csv and Path(args.torch_csv).exists() else []
    torch_rows = [r for r in torch_rows if r["device"] == device]
    cells = summarise(gknn_rows, torch_rows)
    if not cells:
        print(f"report: no complete cell of {device} in {args.gknn_csv}", file=sys.stderr)
        return 1
    auto_note = None
    if args.auto_from:
        replaced, dueled = recheck_auto(cells, [r for r in read(args.auto_from) if r["device"] == device])
        auto_note = (f"Auto times re-checked (`gknn bench --sweep --sweep-auto-only`, {args.auto_from}) in "
                     f"{replaced} of the {len(cells)} measured cells, in {dueled} of them side by side with the "
                     "cell's best pair (--sweep-best-from: both times from that duel); the others are the full sweep's.")
    grid = seen_grid(gknn_rows)
    for name in CELL:
        given = getattr(args, f"grid_{name}")
        if given:
            grid[name] = given
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "suite.md").write_text(markdown(cells, device, grid_cells(grid), others, auto_note)
                                      + fused_section(fused_gains(gknn_rows)))
    print(f"wrote {out_dir / 'suite.md'}")
    for path in heat_maps(cells, grid, out_dir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
