#!/usr/bin/env python3
"""bench/gpu/plot_distance.py on a hand-made CSV (tests/scripts/plot_distance_input.csv; made-up numbers, not a
measurement): the parsing, the per-(distance, config, k) choice of the fastest distance stage, the variants left
out by default, and -- where python3 has matplotlib -- the PNG. Without matplotlib that part says it is skipped.

  python3 plot_distance_test.py bench/gpu/plot_distance.py tests/scripts/plot_distance_input.csv
"""
import importlib.util
import os
import sys
import tempfile


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}")
        sys.exit(1)
    print(f"ok: {what}")


def main():
    script, csv_path = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("plot_distance", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    rows, skipped = mod.load(csv_path)
    check(len(rows) == 8 and skipped == 1, "8 rows with fractions, the one without (tf32x3) counted apart")
    check(isinstance(rows[0]["k"], int) and isinstance(rows[0]["distance_ms"], float), "numbers converted")

    groups = mod.aggregate(rows)
    keys = [(g["distance"], g["config"], g["k"]) for g in groups]
    check(keys == [("auto", "garcia", 16), ("cublas", "garcia", 16), ("naive", "garcia", 16),
                   ("lp_gemm", "sift1m_l1", 100)], f"one group per (distance, config, k), variants left out: {keys}")
    check(groups[0]["selection"] == "insertion" and groups[0]["distance_ms"] == 0.4,
          "the fastest distance stage of a group's selections (auto/insertion, 0.4 ms)")
    check(groups[3]["selection"] == "auto" and abs(groups[3]["arith_fraction"] - 0.67) < 1e-12,
          "lp_gemm: its auto row (113 ms < 114 ms)")

    every = mod.aggregate(rows, all_variants=True)
    check([g["distance"] for g in every] == ["auto", "auto-nomerge", "cublas", "naive", "lp_gemm", "tf32-noguard"],
          "--all-variants keeps auto-nomerge and tf32-noguard")
    check([g["config"] for g in mod.aggregate(rows, configs={"sift1m_l1"})] == ["sift1m_l1"], "--configs filters")
    check("auto (fused)" in mod.label(groups[0]) and "k=16" in mod.label(groups[0]), "labels name path, shape, k")

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("SKIPPED (PNG part): matplotlib is not installed for this python3; parsing and aggregation passed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        png = os.path.join(tmp, "distance.png")
        rc = mod.main(["--csv", csv_path, "--png", png])
        with open(png, "rb") as f:
            magic = f.read(8)
        check(rc == 0 and magic == b"\x89PNG\r\n\x1a\n", "the PNG written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
