"""trace_search.py: where the time of one small Index search goes: host CUDA calls and device work on one timeline.

Builds a gknn.Index("cuda") of n x d integer rows 0..255 (as gknn_gpu_bench), makes --warm searches of q
queries, then traces --reps more with torch's profiler (CUPTI sees every CUDA runtime call of the process, gknn's
included, and every kernel and copy) and prints the last traced search as a timeline: each runtime call (host)
and each kernel / copy (device) with its start relative to the search call's start and its duration, then the
median wall of the traced calls. Diagnostic only (the profiler adds some microseconds per call): use
gknn_gpu_bench --configs calls_q1 for timings.

Usage (after building build-device with the Python module):
    PYTHONPATH=build-device/python python3 bench/gpu/trace_search.py [--n 1000000] [--q 1] [--k 100]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
import copy_trace  # noqa: E402
from torch_common import import_torch_or_exit  # noqa: E402

import gknn  # noqa: E402

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CATEGORIES = ("cuda_runtime", "cuda_driver")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--q", type=int, default=1)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--distance", default="auto")
    ap.add_argument("--warm", type=int, default=50)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    torch = import_torch_or_exit()

    rng = np.random.default_rng(1)
    base = rng.integers(0, 256, size=(args.n, args.d)).astype(np.float32)
    queries = rng.integers(0, 256, size=(args.q, args.d)).astype(np.float32)
    index = gknn.Index(args.d, backend="cuda")
    index.add(base)
    for _ in range(args.warm):
        index.search(queries, args.k, distance=args.distance)
    torch.cuda.synchronize()

    walls = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(args.reps):
            with torch.profiler.record_function(f"search_{i}"):
                t0 = time.perf_counter()
                index.search(queries, args.k, distance=args.distance)
                walls.append((time.perf_counter() - t0) * 1e3)
    events = copy_trace.chrome_events(prof)
    last = [e for e in events if e.get("name") == f"search_{args.reps - 1}" and e.get("ph") == "X"]
    if not last:
        print("no record_function event for the last search in the trace")
        return 1
    t0, t1 = float(last[0]["ts"]), float(last[0]["ts"]) + float(last[0]["dur"])
    rows = []
    for e in events:
        cat = e.get("cat", "")
        if e.get("ph") != "X" or (cat not in DEVICE_CATEGORIES and cat not in HOST_CATEGORIES):
            continue
        ts = float(e["ts"])
        if t0 <= ts <= t1:
            side = "device" if cat in DEVICE_CATEGORIES else "host"
            rows.append((ts - t0, float(e.get("dur", 0)), side, e["name"][:90]))
    rows.sort()
    print(f"n={args.n} d={args.d} q={args.q} k={args.k} distance={args.distance}: last traced search "
          f"{t1 - t0:.1f} us (profiled); median wall of {args.reps} profiled calls {statistics.median(walls):.4f} ms")
    print(f"{'start us':>9} {'dur us':>8}  side    name")
    for start, dur, side, name in rows:
        print(f"{start:9.1f} {dur:8.1f}  {side:6}  {name}")
    device = sum(d for _, d, s, _ in rows if s == "device")
    print(f"device busy {device:.1f} us of {t1 - t0:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
