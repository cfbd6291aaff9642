"""python_search.py: one exact search timed from Python next to the same search from C++, on identical data.

Per data case (uint8-valued float32, as gknn_gpu_bench's sift1m, and uniform float32 in [0, 1)), three calls,
each timed from Python (the gknn module) and from C++ (gknn_device_search_bench on the same .npy files):
  device:      torch CUDA tensors in, torch CUDA tensors out   | C++ gknn::search on Memory::Device views
  index_device: gknn.Index("cuda") added from a CUDA tensor,   | C++ cuda gknn::Index added from a device view,
               CUDA tensor queries in/out                      | device queries and outputs
  index:       gknn.Index("cuda"), numpy queries in/out        | C++ resident gknn::Index, host queries
  host_search: gknn.search on numpy arrays (base uploaded)     | C++ gknn::search on host views
  device_again: the device call once more, after the others (the index is still held)
One warm-up call, then --reps calls; the median wall time of the synchronous call, and CUDA events recorded
on the caller's stream before and after it. Then, for the torch call: the indices must equal those of the C++
device call, gknn must have read and written the caller's tensors in place (pointers seen at the C++ boundary),
and the CUDA trace (torch profiler, CUPTI: every copy of the process) must show no host <-> device copy as large
as the queries or results. Exit status 1 when any check fails.

Usage (from the repository root, after building build-device with the Python module):
    PYTHONPATH=build-device/python python3 bench/gpu/python_search.py --build build-device [--md OUT.md]
(--cli build-device/tools/gknn, the older form, names the build by its tool.)
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
from torch_common import import_torch_or_exit  # noqa: E402
import copy_trace  # noqa: E402

import gknn  # noqa: E402

CALLS = [("device", "CUDA tensors in/out (torch; C++ device views)"),
         ("index_device", "gknn.Index of CUDA tensors, CUDA tensors in/out"),
         ("index", "resident index, host queries"),
         ("host_search", "host arrays, base uploaded per call"),
         ("device_again", "CUDA tensors in/out, timed again last")]


def timed(torch, run, reps):
    """(median wall ms, median event ms, last result): one warm-up, then reps synchronous calls."""
    run()
    torch.cuda.synchronize()
    walls, events, result = [], [], None
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        result = run()
        stop.record()
        stop.synchronize()
        walls.append((time.perf_counter() - t0) * 1e3)
        events.append(start.elapsed_time(stop))
    return statistics.median(walls), statistics.median(events), result


def make_data(case, rows, queries, dim):
    rng = np.random.default_rng(42)
    if case == "uint8-valued":
        return (rng.integers(0, 256, (rows, dim)).astype(np.float32),
                rng.integers(0, 256, (queries, dim)).astype(np.float32))
    return rng.random((rows, dim), dtype=np.float32), rng.random((queries, dim), dtype=np.float32)


def run_cpp(bench, base, queries, k, reps, tmp):
    paths = {name: os.path.join(tmp, name + ".npy") for name in ("base", "queries", "indices")}
    np.save(paths["base"], base)
    np.save(paths["queries"], queries)
    out = subprocess.run([bench, "--base", paths["base"], "--queries", paths["queries"], "-k", str(k),
                          "--repeats", str(reps), "--indices", paths["indices"]],
                         check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    report["indices"] = np.load(paths["indices"])
    for name in ("base", "queries", "indices"):
        os.remove(paths[name])
    return report


def in_place_and_traced(torch, base_t, queries_t, k):
    """One torch search with gknn's C++ entry spied on: (D, I, pointers seen, pointers expected, Trace)."""
    seen = []
    native = gknn._gknn.search_device

    def spy(base_desc, query_desc, *args):
        seen.append((base_desc["data"], query_desc["data"], args[-2], args[-1]))
        return native(base_desc, query_desc, *args)

    gknn._gknn.search_device = spy
    try:
        (D, I), trace = copy_trace.traced(torch, lambda: gknn.search(base_t, queries_t, k))
    finally:
        gknn._gknn.search_device = native
    expected = (base_t.data_ptr(), queries_t.data_ptr(), D.data_ptr(), I.data_ptr())
    return D, I, seen[-1] if seen else None, expected, trace


def measure_case(torch, case, args, bench, tmp):
    base, queries = make_data(case, args.rows, args.queries, args.dim)
    cpp = run_cpp(bench, base, queries, args.k, args.reps, tmp)
    base_t, queries_t = torch.from_numpy(base).cuda(), torch.from_numpy(queries).cuda()
    index = gknn.Index(args.dim, backend="cuda")
    index.add(base)
    py = {"device": timed(torch, lambda: gknn.search(base_t, queries_t, args.k), args.reps)}
    index_t = gknn.Index(args.dim, backend="cuda")
    index_t.add(base_t)  # device to device
    py["index_device"] = timed(torch, lambda: index_t.search(queries_t, args.k), args.reps)
    del index_t
    py["index"] = timed(torch, lambda: index.search(queries, args.k), args.reps)
    py["host_search"] = timed(torch, lambda: gknn.search(base, queries, args.k), args.reps)
    py["device_again"] = timed(torch, lambda: gknn.search(base_t, queries_t, args.k), args.reps)
    D, I, seen, expected, trace = in_place_and_traced(torch, base_t, queries_t, args.k)
    smallest = min(queries.nbytes, D.nbytes, I.nbytes)
    checks = {
        "torch indices == C++ device indices": bool(np.array_equal(I.cpu().numpy(), cpp["indices"])),
        "torch indices == numpy-array search": bool(np.array_equal(I.cpu().numpy(), py["host_search"][2][1])),
        "torch Index indices == C++ device indices": bool(np.array_equal(py["index_device"][2][1].cpu().numpy(),
                                                                          cpp["indices"])),
        "pointers at the C++ boundary == caller's base/queries, returned D/I": seen == expected,
        "profiler saw the search's kernels": trace.kernels > 0,
        f"host<->device bytes < {smallest} (smallest of queries/D/I)": trace.host_device_bytes() < smallest,
    }
    del base_t, queries_t, index
    torch.cuda.empty_cache()
    return cpp, py, checks, trace


def table(results, args):
    lines = [f"Shape: {args.rows} x {args.dim} base, {args.queries} queries, k = {args.k}, squared L2; "
             f"median of {args.reps} calls after one warm-up; wall = the synchronous call, events = CUDA events "
             "on the caller's stream around it.", "",
             "| data | call | Python wall ms | Python events ms | C++ wall ms | C++ events ms | Python / C++ | "
             "plan (distance + select) |", "|---|---|---|---|---|---|---|---|"]
    for case, (cpp, py, _, _) in results.items():
        for name, label in CALLS:
            pw, pe, _ = py[name]
            cw, ce = cpp[name]["median_wall_ms"], cpp[name]["median_event_ms"]
            plan = f"{cpp[name]['distance']} + {cpp[name]['select']}"
            lines.append(f"| {case} | {label} | {pw:.2f} | {pe:.2f} | {cw:.2f} | {ce:.2f} | {pw / cw:.3f} | {plan} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("-k", type=int, default=100)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--cases", default="uint8-valued,float32", help="comma-separated: uint8-valued, float32")
    parser.add_argument("--build", help="the build directory (bench/gknn_device_search_bench in it)")
    parser.add_argument("--cli", help="the build's gknn tool (older form of --build: its parent's parent)")
    parser.add_argument("--md", help="also write the table and checks to this Markdown file")
    args = parser.parse_args()
    build = args.build or (os.path.dirname(os.path.dirname(os.path.abspath(args.cli))) if args.cli else None)
    if not build:
        parser.error("--build (or --cli) is required: the C++ side runs on the same data")
    bench = os.path.join(build, "bench", "gknn_device_search_bench")
    if not os.access(bench, os.X_OK):
        print(f"python_search.py: {bench} not found (a CUDA build with benchmarks makes it)")
        return 1
    torch = import_torch_or_exit("python_search.py: {reason}; nothing measured")

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            results[case] = measure_case(torch, case, args, bench, tmp)
    gpu = next(iter(results.values()))[0]["gpu"]
    lines = [f"Device: {gpu}; torch {torch.__version__}, Python {sys.version.split()[0]}", "", table(results, args), ""]
    ok = True
    for case, (cpp, _, checks, trace) in results.items():
        for name, _ in CALLS:
            phases = ", ".join(f"{key} {value:.1f}" for key, value in cpp[name]["phases_ms"].items() if value)
            lines.append(f"{case}, C++ {name}: phases ms {phases}; query tiles {cpp[name]['query_tiles']}, "
                         f"base tiles {cpp[name]['base_tiles']}")
        lines.append(f"{case}, torch call under the CUDA trace: {trace.summary()}")
        for name, passed in checks.items():
            lines.append(f"  {'ok  ' if passed else 'FAIL'} {name}")
            ok = ok and passed
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
