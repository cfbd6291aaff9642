"""fused_shapes.py: the fused kernel's device time across shapes, to split it into a fixed part and a part per tile.

For each (n, q, d, k) of --shapes, builds a gknn.Index("cuda") of n x d integer rows 0..255 (as gknn_gpu_bench),
makes --warm searches of q such queries, then profiles --reps more with torch's profiler and prints the median
duration of every kernel of one search (the fused kernel and the small ones around it), and the median wall of the
profiled calls. Fitting kernel ms = a + b x (base rows per split) over shapes of one (q, k) tells the fixed cost
(prologue, first sorts, final sort, list write, merge) from the walk's cost per tile. Diagnostic only: use
gknn_gpu_bench for timings.

Usage (after building build-device with the Python module):
    PYTHONPATH=build-device/python python3 bench/gpu/fused_shapes.py \
        --shapes 16384x4096x128x16,32768x4096x128x16,65536x4096x128x16
"""
import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
import copy_trace  # noqa: E402
from torch_common import import_torch_or_exit  # noqa: E402

import gknn  # noqa: E402


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        n, q, d, k = (int(v) for v in item.lower().split("x"))
        shapes.append((n, q, d, k))
    return shapes


def profile_shape(torch, n, q, d, k, warm, reps, distance):
    rng = np.random.default_rng(1)
    base = rng.integers(0, 256, size=(n, d)).astype(np.float32)
    queries = rng.integers(0, 256, size=(q, d)).astype(np.float32)
    index = gknn.Index(d, backend="cuda")
    index.add(base)
    for _ in range(warm):
        index.search(queries, k, distance=distance)
    torch.cuda.synchronize()
    walls = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            t0 = time.perf_counter()
            index.search(queries, k, distance=distance)
            walls.append((time.perf_counter() - t0) * 1e3)
    events = copy_trace.chrome_events(prof)
    per_kernel = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "") in ("kernel", "gpu_memcpy", "gpu_memset"):
            per_kernel[e["name"][:70]].append(float(e.get("dur", 0)) / 1e3)
    # every search launches the same kernels: a kernel's median over its launches, times its launches per search
    per_kernel = {name: statistics.median(v) * len(v) / reps for name, v in per_kernel.items()}
    return statistics.median(walls), per_kernel


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="16384x4096x128x16,32768x4096x128x16,65536x4096x128x16,131072x4096x128x16")
    ap.add_argument("--distance", default="auto")
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    torch = import_torch_or_exit()
    print("| n | q | d | k | wall ms | kernel | device ms |")
    print("|---:|---:|---:|---:|---:|---|---:|")
    for n, q, d, k in parse_shapes(args.shapes):
        wall, kernels = profile_shape(torch, n, q, d, k, args.warm, args.reps, args.distance)
        for name, ms in sorted(kernels.items(), key=lambda kv: -kv[1]):
            print(f"| {n} | {q} | {d} | {k} | {wall:.3f} | {name} | {ms:.4f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
