#!/usr/bin/env python3
"""torch.topk on the shapes of gknn_large_k_bench (bench_large_k.cu): the k smallest of each row of uniform
[0, 1) float32 keys generated on the device (fixed seed), sorted=True and sorted=False. Each measurement is the
median of --reps runs timed with CUDA events after --warmup runs. Writes a CSV with the columns of the C++
driver (method torch_topk), so plot.py can put both in one table and one figure.

  python3 bench/gpu/large_k/torch_topk.py [--quick] [--reps N] [--warmup N] [--csv FILE]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/gpu, where torch_common.py lives
import torch_common as tc  # noqa: E402 (needs the path above)


def k_values(n):
    return [k for k in dict.fromkeys([2048, 4096, 16384, n // 10, n // 3, n // 2]) if 1 <= k <= n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    tc.add_common_args(ap, reps=10, warmup=2)
    ap.add_argument("--csv", default="bench/results/large_k_torch.csv")
    args = ap.parse_args()
    torch = tc.import_torch_or_exit()
    dev = torch.device("cuda", args.device)
    shapes = [(64, 1 << 18), (1024, 1 << 15)] if args.quick else [(1000, 1 << 20), (8192, 1 << 17)]
    table = []
    for rows, cols in shapes:
        gen = torch.Generator(device=dev)
        gen.manual_seed(0x1A46E5EED)
        x = torch.rand((rows, cols), device=dev, dtype=torch.float32, generator=gen)
        for k in k_values(cols):
            for sorted_ in (True, False):
                ms, gkeys, note = tc.time_topk_smallest(x, k, sorted_, args.warmup, args.reps, dev, "failed: ")
                if note:  # it failed (e.g. out of memory): free what it left cached before the next case
                    torch.cuda.empty_cache()
                print(f"{rows:6d} x {cols:<8d} k={k:<8d} torch_topk {'sorted' if sorted_ else 'unsorted':8s} "
                      f"{ms:10.3f} ms {note}", flush=True)
                table.append([rows, cols, k, "torch_topk", int(sorted_), ms, gkeys, note])
        del x
        torch.cuda.empty_cache()
    tc.write_csv(args.csv, ["rows", "cols", "k", "method", "sorted", "ms", "gkeys_per_s", "note"], table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
