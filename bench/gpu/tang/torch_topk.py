#!/usr/bin/env python3
"""torch.topk on the cells of gknn_tang_bench (bench_tang.cu, Tang et al.'s Table I): the k smallest of each of
Q = 2^13 rows of N uniform [0, 1) float32 keys generated on the device (fixed seed), sorted=True. Each time is
the median of --reps runs timed with CUDA events after --warmup runs. Writes a CSV that gknn_tang_bench merges
into its table (--torch-csv).

  python3 bench/gpu/tang/torch_topk.py [--quick] [--full] [--reps N] [--warmup N] [--csv FILE]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/gpu, where torch_common.py lives
import torch_common as tc  # noqa: E402 (needs the path above)


def cells(quick, full):
    if quick:
        return [(1 << 13, 32), (1 << 13, 1024), (1 << 15, 256)]
    if full:
        return [(1 << ln, 1 << lk) for ln in range(13, 17) for lk in range(5, 11)]
    return [(1 << 15, 1 << lk) for lk in range(5, 11)] + [(1 << ln, 256) for ln in (13, 14, 16)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="Q = 2^10 and three cells (a smoke test)")
    ap.add_argument("--full", action="store_true", help="all 24 (N, k) pairs instead of the paper's two sweeps")
    tc.add_timing_args(ap, reps=5, warmup=1)
    ap.add_argument("--csv", default="bench/results/tang_torch.csv")
    args = ap.parse_args()
    torch = tc.import_torch_or_exit()
    dev = torch.device("cuda", args.device)
    q = 1 << 10 if args.quick else 1 << 13
    rows = []
    x, x_n = None, -1
    for n, k in cells(args.quick, args.full):
        if n != x_n:
            del x
            torch.cuda.empty_cache()
            gen = torch.Generator(device=dev)
            gen.manual_seed(0x7A46 + n)
            x = torch.rand((q, n), device=dev, dtype=torch.float32, generator=gen)
            x_n = n
        note, ms = "", -1.0
        try:
            ms = tc.time_cuda(lambda: torch.topk(x, k, dim=1, largest=False, sorted=True), args.warmup, args.reps,
                              dev)
        except RuntimeError as e:  # e.g. out of memory
            note = tc.error_note("failed: ", e)
            torch.cuda.empty_cache()
        print(f"N={n:<6d} k={k:<5d} torch.topk {ms:10.3f} ms {note}", flush=True)
        rows.append([q, n, k, "torch_topk", ms, args.reps, note])
    tc.write_csv(args.csv, ["q", "n", "k", "method", "ms", "runs", "note"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
