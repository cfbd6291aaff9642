#!/usr/bin/env python3
"""torch.topk on the shapes of gknn_select_bench (bench_select.cu): the k smallest of each row of uniform
[0, 1) float32 keys generated on the device (fixed seed), sorted. Each measurement is the median of --reps runs
timed with CUDA events after --warmup runs. The read bandwidth is measured in the same run (torch.sum over a
2 GiB tensor, the peer of the C++ driver's reduction kernel) unless --read-bw gives the driver's figure.
Writes a CSV with the columns of the C++ driver (implementation torch), so plot.py can draw both.

  python3 bench/gpu/select_small/torch_topk.py [--quick] [--reps N] [--warmup N] [--read-bw GBPS] [--csv FILE]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/gpu, where torch_common.py lives
import torch_common as tc  # noqa: E402 (needs the path above)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    tc.add_common_args(ap, reps=7, warmup=2)
    ap.add_argument("--read-bw", type=float, default=0.0, help="read bandwidth in GB/s (default: measure)")
    ap.add_argument("--csv", default="bench/results/select_small_torch.csv")
    args = ap.parse_args()
    torch = tc.import_torch_or_exit()
    dev = torch.device("cuda", args.device)
    read_bw = args.read_bw
    if read_bw <= 0:
        buf = torch.rand(1 << 29, device=dev, dtype=torch.float32)  # 2 GiB
        ms = tc.time_cuda(lambda: buf.sum(), args.warmup, args.reps, dev)
        read_bw = buf.numel() * 4 / (ms * 1e6)
        del buf
    print(f"read bandwidth {read_bw:.1f} GB/s")
    if args.quick:
        shapes, ks = [(128, 1 << 20), (1024, 1 << 17), (1, 1 << 24)], [1, 32, 2048, 4096]
    else:
        shapes, ks = [(1024, 1 << 20), (8192, 1 << 17), (1, 1 << 27)], [1, 8, 32, 128, 512, 2048, 4096]
    header = ["implementation", "algorithm", "thread_queue", "prefetch", "q", "n", "k", "ms", "gkeys_per_s",
              "gbytes_per_s", "pct_read_bw", "note"]
    rows = []
    for q, n in shapes:
        gen = torch.Generator(device=dev)
        gen.manual_seed(0x5E1EC7)
        x = torch.rand((q, n), device=dev, dtype=torch.float32, generator=gen)
        for k in ks:
            ms, gkeys, note = tc.time_topk_smallest(x, k, True, args.warmup, args.reps, dev, "not run: ")
            pct = 100.0 * 4 * gkeys / read_bw
            print(f"{q:5d} x {n:<10d} k={k:<5d} torch.topk {ms:9.3f} ms {gkeys:8.1f} Gkeys/s {pct:5.1f}% {note}")
            rows.append(["torch", "torch.topk", 0, 0, q, n, k, ms, gkeys, 4 * gkeys, pct, note])
        del x
    tc.write_csv(args.csv, header, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
