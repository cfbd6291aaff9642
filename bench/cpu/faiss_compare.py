#!/usr/bin/python3
"""gknn CPU backend vs FAISS IndexFlatL2 on the same data, same machine, same thread count.

Generates uniform [0,1) float32 data with a fixed seed, writes it as raw float32 files, times FAISS (python3-faiss)
in this process and then gknn's C++ driver (gknn_cpu_bench) on the same files: one warm-up and the median of
--repeats timed searches each. Prints a Markdown table; --markdown PATH also writes it there.

  /usr/bin/python3 bench/cpu/faiss_compare.py --build build-cpu [--n 100000 --q 1000 --d 128 --k 100]
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import faiss
import numpy as np


def lscpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def time_faiss(base, queries, k, repeats):
    index = faiss.IndexFlatL2(base.shape[1])
    index.add(base)
    index.search(queries, k)  # warm-up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        distances, labels = index.search(queries, k)
        seconds.append(time.perf_counter() - start)
    return seconds, labels


def time_gknn(driver, base_path, query_path, d, k, repeats, threads, extra):
    out_path = base_path + ".gknn_indices"
    cmd = [driver, base_path, query_path, str(d), str(k), "--repeats", str(repeats), "--threads", str(threads),
           "--out", out_path] + extra
    line = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    fields = dict(item.split("=", 1) for item in line.split())
    return float(fields["median_s"]), float(fields["min_s"]), float(fields["max_s"]), np.fromfile(out_path, dtype=np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-cpu", help="CMake build dir holding bench/gknn_cpu_bench")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--q", type=int, default=1000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--gknn-args", default="", help="extra driver options, e.g. '--select quickselect'")
    ap.add_argument("--markdown", help="write the table to this file")
    args = ap.parse_args()

    driver = os.path.join(args.build, "bench", "gknn_cpu_bench")
    if not os.access(driver, os.X_OK):
        sys.exit(f"faiss_compare: {driver} not found; build the target gknn_cpu_bench first")
    rng = np.random.default_rng(args.seed)
    base = rng.random((args.n, args.d), dtype=np.float32)
    queries = rng.random((args.q, args.d), dtype=np.float32)
    faiss.omp_set_num_threads(args.threads)
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="gknn_faiss_") as tmp:
        base_path, query_path = os.path.join(tmp, "base.f32"), os.path.join(tmp, "queries.f32")
        base.tofile(base_path)
        queries.tofile(query_path)
        f_seconds, f_labels = time_faiss(base, queries, args.k, args.repeats)
        g_median, g_min, g_max, g_labels = time_gknn(driver, base_path, query_path, args.d, args.k, args.repeats,
                                                     args.threads, args.gknn_args.split())

    g_labels = g_labels.reshape(args.q, args.k)
    same_rank = float(np.mean(g_labels == f_labels))
    same_set = np.mean([len(np.intersect1d(g, f)) / args.k for g, f in zip(g_labels, f_labels)])
    f_median = statistics.median(f_seconds)
    ratio = g_median / f_median
    env = " ".join(f"{v}={os.environ[v]}" for v in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS") if v in os.environ)
    table = "\n".join([
        f"Machine: {lscpu_model()}, {os.cpu_count()} cores, {args.threads} threads; FAISS {faiss.__version__}, "
        f"numpy {np.__version__}; environment: {env or 'default'}; load average before/after: "
        f"{load_before:.1f}/{os.getloadavg()[0]:.1f}",
        f"Data: uniform [0,1) float32, seed {args.seed}, n={args.n}, q={args.q}, d={args.d}, k={args.k}, squared L2; "
        f"1 warm-up + median of {args.repeats}",
        "",
        "| implementation | median s | min s | max s | queries/s |",
        "|---|---|---|---|---|",
        f"| FAISS IndexFlatL2 | {f_median:.4f} | {min(f_seconds):.4f} | {max(f_seconds):.4f} | {args.q / f_median:.0f} |",
        f"| gknn cpu ({args.gknn_args or 'auto'}) | {g_median:.4f} | {g_min:.4f} | {g_max:.4f} | {args.q / g_median:.0f} |",
        "",
        f"gknn / FAISS time ratio: **{ratio:.3f}** (target <= 1.2). Identical neighbour at the same rank: "
        f"{100 * same_rank:.2f}%; same k-sets: {100 * same_set:.2f}% (differences are float near-ties).",
    ])
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
