#!/usr/bin/env python3
"""bench/suite/report.py on a partial grid (made-up numbers, not a measurement), as the suite leaves it between two
slices of `run.sh --budget`: cells missing, one cut short (candidates without Auto), a cell of another device, capped
candidates, candidates skipped as hopeless (runs 0, an estimate below the best), torch times for some cells only.

  python3 report_suite_test.py bench/suite/report.py markdown   # the counts, the worst ratio, the panels' values
  python3 report_suite_test.py bench/suite/report.py png        # the heat map PNG; exit 77 (skipped) without matplotlib
"""
import importlib.util
import os
import sys
import tempfile

HEADER = "device,metric,data,n,q,d,k,path,distance,select,ms,runs,auto_distance,auto_select,capped"


def cell_rows(device, n, q, k, best, auto, capped=0, skipped=0, complete=True):
    """A cell's lines: its fastest candidate (`best` ms), `capped` slower capped ones, `skipped` ones skipped as
    hopeless (an estimate below `best`: it must not count), then Auto (when complete)."""
    key = f"{device},squared_l2,integer,{n},{q},8,{k}"
    rows = [f"{key},candidate,cublas,auto,{best},3,cublas,bits,0"]
    rows += [f"{key},candidate,garcia_global,auto,{best * 10 + i},1,cublas,bits,1" for i in range(capped)]
    rows += [f"{key},candidate,cublas,insertion{i},{best / 10},0,cublas,bits,1" for i in range(skipped)]
    if complete:
        rows.append(f"{key},auto,auto,auto,{auto},3,cublas,bits,0")
    return rows


# Grid n {1000, 4000} x q {1, 10} x d {8} x k {1, 5}: 8 cells. H100 measured 5 of them (n=1000 q=10 k=1 is the worst,
# Auto / best 3); n=4000 q=10 k=1 was cut short; two were never started. The H200 cell's ratio (10) is not H100's.
GKNN = [HEADER]
GKNN += cell_rows("H100", 1000, 1, 1, 1.0, 1.5, capped=2)
GKNN += cell_rows("H100", 1000, 1, 5, 1.0, 1.0)
GKNN += cell_rows("H100", 1000, 10, 1, 1.0, 3.0, skipped=2)
GKNN += cell_rows("H100", 1000, 10, 5, 2.0, 2.0)
GKNN += cell_rows("H100", 4000, 1, 1, 4.0, 4.0)
GKNN += cell_rows("H100", 4000, 10, 1, 0.001, 0, complete=False)
GKNN += cell_rows("H200", 4000, 10, 5, 1.0, 10.0)
TORCH = ["device,metric,data,n,q,d,k,torch_ms,runs,note",
         "H100,squared_l2,integer,1000,1,8,1,3.0,3,", "H100,squared_l2,integer,1000,10,8,1,6.0,3,",
         "H100,squared_l2,integer,4000,10,8,1,5.0,3,", "H200,squared_l2,integer,1000,1,8,5,1.0,3,"]


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}")
        sys.exit(1)
    print(f"ok: {what}")


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def markdown_part(mod, tmp, gknn_csv, torch_csv):
    rows = mod.read(gknn_csv)
    check(mod.main_device(rows) == "H100", "the device with the most rows is reported")
    h100 = [r for r in rows if r["device"] == "H100"]
    cells = mod.summarise(h100, [r for r in mod.read(torch_csv) if r["device"] == "H100"])
    check(len(cells) == 5, f"5 complete cells: the one cut short is not one ({sorted(cells)})")
    grid = mod.seen_grid(h100)
    check(grid["n"] == [1000, 4000] and grid["q"] == [1, 10] and grid["k"] == [1, 5], f"the grid seen: {grid}")
    expected = mod.grid_cells(grid)
    text = mod.markdown(cells, "H100", expected, ["H200"])
    check("Cells: 5 of 8 measured, 3 missing" in text, "measured and missing cells counted")
    for missing in ("n=4000, q=1, d=8, k=5", "n=4000, q=10, d=8, k=1", "n=4000, q=10, d=8, k=5"):
        check(missing in text.split("Missing: ")[1].split("\n")[0], f"missing cell named: {missing}")
    check("Worst Auto / best over the measured cells: 3.00 at metric=squared_l2, data=integer, n=1000, q=10, d=8, "
          "k=1." in text, "the worst ratio over H100's measured cells only")
    check("other devices): H200" in text, "the other device named, not mixed in")
    check("(timed once: their first call was past the cap times the cell's best): 2." in text, "capped counted")
    check("Skipped as hopeless (capped in a smaller cell: not run, time estimated): 2." in text, "skipped counted")
    check(cells[("squared_l2", "integer", 1000, 10, 8, 1)]["best_pair"] == "cublas+auto", "a skipped one is no best")
    check("slower than torch in 0 of the 2 cells with a torch time" in text, "speedups over the cells torch timed")
    check(sum(line.startswith("| squared_l2 ") for line in text.splitlines()) == 5, "one table row per measured cell")

    values = mod.panel(cells, "squared_l2", "integer", 8, 1, [1000, 4000], [1, 10])
    check(values == [[2.0, 2.0], ["no torch", None]], f"panel d=8 k=1: speedups, no torch, not measured: {values}")

    grid["q"] = [1, 10, 100, 1000]  # a grid larger than what is measured: missing cells counted per group
    text = mod.markdown(cells, "H100", mod.grid_cells(grid))
    check("Cells: 5 of 16 measured, 11 missing" in text, "a larger grid: 11 missing")
    check("squared_l2 integer n=1000 d=8: 4; squared_l2 integer n=4000 d=8: 7." in text, "many missing: per group")

    out = os.path.join(tmp, "md")
    rc = mod.main([gknn_csv, torch_csv, "--out-dir", out, "--grid-q", "1,10,100,1000"])
    with open(os.path.join(out, "suite.md")) as f:
        check(rc == 0 and "Cells: 5 of 16 measured, 11 missing" in f.read(), "main() with --grid-q writes suite.md")
    rc = mod.main([gknn_csv, "--out-dir", out, "--device", "H200"])
    with open(os.path.join(out, "suite.md")) as f:
        text = f.read()
    check(rc == 0 and "# Benchmark suite (H200)" in text and "Worst Auto / best over the measured cells: 10.00" in text,
          "--device H200 reports that card alone, without a torch file")

    # Auto re-checked (--sweep-auto-only): the worst cell's Auto got faster; a cell the full sweep lacks, and another
    # device's line, change nothing.
    recheck = os.path.join(tmp, "recheck.csv")
    write(recheck, [HEADER, "H100,squared_l2,integer,1000,10,8,1,auto,auto,auto,1.2,3,fused,auto,0",
                    "H100,squared_l2,integer,4000,1,8,5,auto,auto,auto,9.0,3,fused,auto,0",
                    "H200,squared_l2,integer,1000,1,8,1,auto,auto,auto,99.0,3,fused,auto,0"])
    rc = mod.main([gknn_csv, torch_csv, "--out-dir", out, "--auto-from", recheck])
    with open(os.path.join(out, "suite.md")) as f:
        text = f.read()
    check(rc == 0 and "Auto times re-checked" in text and "in 1 of the 5 measured cells" in text,
          "--auto-from: the re-checked cells counted")
    check("Worst Auto / best over the measured cells: 1.50 at metric=squared_l2, data=integer, n=1000, q=1, d=8, k=1."
          in text, "--auto-from: the worst ratio from the re-checked Auto (3.00 -> 1.20: now n=1000 q=1 k=1's 1.50)")

    # Side by side with the cell's best pair (--sweep-best-from): that duel's best time replaces the full sweep's too
    # (1.5 / 1.0 -> 1.47 / 1.4), so the worst cell is now the Auto-only re-check's n=1000 q=10 k=1 (1.20).
    write(recheck, [HEADER, "H100,squared_l2,integer,1000,10,8,1,auto,auto,auto,1.2,3,fused,auto,0",
                    "H100,squared_l2,integer,1000,1,8,1,candidate,cublas,auto,1.4,25,fused,auto,0",
                    "H100,squared_l2,integer,1000,1,8,1,auto,auto,auto,1.47,25,fused,auto,0"])
    rc = mod.main([gknn_csv, torch_csv, "--out-dir", out, "--auto-from", recheck])
    with open(os.path.join(out, "suite.md")) as f:
        text = f.read()
    check(rc == 0 and "in 2 of the 5 measured cells, in 1 of them side by side" in text,
          "--auto-from with a duel: Auto replaced in 2 cells, the best in 1")
    check("Worst Auto / best over the measured cells: 1.20 at metric=squared_l2, data=integer, n=1000, q=10, d=8, k=1."
          in text, "--auto-from with a duel: the duel's best time replaces the full sweep's (1.50 -> 1.05)")


def fused_part(mod):
    """The fused kernel's gain over the best two-stage pair, where issue 13 sets a target (q >= 8192)."""
    key = "H100,squared_l2,integer,{n},{q},{d},{k}"
    rows = [HEADER]
    for n, q, d, k, fused, other in ((1000, 10000, 8, 10, 1.0, 1.6), (4000, 10000, 8, 10, 2.0, 6.0),
                                     (1000, 10000, 128, 10, 1.0, 1.1), (1000, 10, 8, 10, 1.0, 1.0),
                                     (1000, 10000, 8, 100, 1.0, 1.0)):
        cell = key.format(n=n, q=q, d=d, k=k)
        rows += [f"{cell},candidate,fused,auto,{fused},3,fused,auto,0",
                 f"{cell},candidate,tf32,bits,{other},3,fused,auto,0",
                 f"{cell},candidate,cublas,bits,{other / 10},0,fused,auto,0"]  # skipped (an estimate): never the best
    rows.append(key.format(n=4000, q=10000, d=32, k=1) + ",candidate,fused,auto,1.0,3,fused,auto,0")  # fused alone
    gains = mod.fused_gains([dict(zip(HEADER.split(","), line.split(","))) for line in rows[1:]])
    check(len(gains) == 5 and gains[("squared_l2", "integer", 4000, 10000, 8, 10)] == (2.0, 6.0, "tf32+bits"),
          f"gains where fused and a two-stage pair were both timed, skipped estimates left out: {gains}")
    text = mod.fused_section(gains)
    check("- d <= 32, k <= 64, q >= 8192: 2 cells, the least gain 1.60x (target 1.5x) at metric=squared_l2, "
          "data=integer, n=1000, q=10000, d=8, k=10." in text,
          "d <= 32: the q >= 8192, k <= 64 cells and their least gain")
    check("- d = 128, k <= 32, q >= 8192: 1 cells, the least gain 1.10x (target 1.2x)" in text,
          "d = 128: a gain below its target is reported as it is")
    check(sum(line.startswith("| squared_l2 ") for line in text.splitlines()) == 3, "a row per cell of a target")
    check("no cell with both timed yet" in mod.fused_section({}), "no cell yet: said so")


def png_part(mod, tmp, gknn_csv, torch_csv):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("SKIPPED: matplotlib is not installed for this python3 (the heat maps are not drawn)")
        return 77
    out = os.path.join(tmp, "png")
    rc = mod.main([gknn_csv, torch_csv, "--out-dir", out, "--grid-q", "1,10,100"])
    with open(os.path.join(out, "suite_squared_l2_integer.png"), "rb") as f:
        check(rc == 0 and f.read(8) == b"\x89PNG\r\n\x1a\n", "the heat map of a partial grid written")
    return 0


def main():
    script, part = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("report", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory() as tmp:
        gknn_csv, torch_csv = os.path.join(tmp, "suite_gknn.csv"), os.path.join(tmp, "suite_torch.csv")
        write(gknn_csv, GKNN)
        write(torch_csv, TORCH)
        if part == "markdown":
            markdown_part(mod, tmp, gknn_csv, torch_csv)
            fused_part(mod)
            return 0
        return png_part(mod, tmp, gknn_csv, torch_csv)


if __name__ == "__main__":
    sys.exit(main())
