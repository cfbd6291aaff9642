"""python_search.py: one exact search timed from Python — torch CUDA tensors (searched in place), numpy host arrays
— next to the same search from C++ (`gknn bench` on the same data), and whether any device -> host copy happened.

Usage (from the repository root, after building build-device with the Python module):
    PYTHONPATH=build-device/python python3 bench/gpu/python_search.py --cli build-device/tools/gknn
Default shape: 1,000,000 x 128 base, 10,000 queries, k = 100, squared L2, integer data (exact in float32).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_common import import_torch_or_exit  # noqa: E402

import gknn  # noqa: E402


def median_ms(run, reps, sync):
    run()  # warm-up: context, pipelines, buffers
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("-k", type=int, default=100)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cli", help="the gknn tool: also time the same search from C++ (gknn bench)")
    args = parser.parse_args()
    torch = import_torch_or_exit("python_search.py: {reason}; nothing measured")

    rng = np.random.default_rng(42)
    base = rng.integers(0, 256, (args.rows, args.dim)).astype(np.float32)
    queries = rng.integers(0, 256, (args.queries, args.dim)).astype(np.float32)
    base_t, queries_t = torch.from_numpy(base).cuda(), torch.from_numpy(queries).cuda()
    sync = torch.cuda.synchronize
    shape = f"{args.rows} x {args.dim}, {args.queries} queries, k = {args.k}"
    rows = [("python, torch CUDA tensors", median_ms(lambda: gknn.search(base_t, queries_t, args.k), args.reps, sync)),
            ("python, numpy host arrays", median_ms(lambda: gknn.search(base, queries, args.k), args.reps, sync))]

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        D, I = gknn.search(base_t, queries_t, args.k)
        sync()
    downloads = sum(1 for e in prof.events() if "Memcpy" in e.name and "DtoH" in e.name)
    uploads = sum(1 for e in prof.events() if "Memcpy" in e.name and "HtoD" in e.name)
    same = bool((I.cpu().numpy() == gknn.search(base, queries, args.k)[1]).all())

    if args.cli:
        with tempfile.TemporaryDirectory() as tmp:
            np.save(os.path.join(tmp, "base.npy"), base)
            np.save(os.path.join(tmp, "queries.npy"), queries)
            out = subprocess.run([args.cli, "bench", "--base", os.path.join(tmp, "base.npy"), "--query",
                                  os.path.join(tmp, "queries.npy"), "-k", str(args.k), "--repeat", str(args.reps),
                                  "--no-split", "--json"], check=True, capture_output=True, text=True).stdout
        rows.append(("C++ (gknn bench, host arrays)", json.loads(out)["stages_s"]["search"] * 1e3))

    print(f"| search ({shape}) | median ms |\n|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.1f} |")
    print(f"\ntorch search: {downloads} device->host and {uploads} host->device copies (CUDA profiler); "
          f"indices identical to the host-array search: {same}")
    return 0 if same and downloads == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
