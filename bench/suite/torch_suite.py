#!/usr/bin/env python3
"""torch_suite.py: PyTorch's exact kNN on the cells of a `gknn bench --sweep --csv` file (the benchmark suite),
for the speedup-over-torch heat maps of report.py. Same data family as the sweep (integers 0..255 or uniform
floats in [0, 1), drawn by torch: not the same values), float32 with TF32 off.

Per cell: squared L2 by one matmul per query chunk (|q|^2 + |x|^2 - 2 q.x) and torch.topk; L1 / Linf / Lp by
torch.cdist(p) and torch.topk. Writes device,metric,data,n,q,d,k,torch_ms,runs (torch_ms empty with the error in
the note column when torch fails, e.g. out of memory).
"""
import argparse
import csv
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))  # bench/gpu/torch_common.py
import torch_common as tc  # noqa: E402

P_OF = {"squared_l2": 2.0, "l2": 2.0, "l1": 1.0, "linf": float("inf"), "lp": 3.0}


def cells(path):
    """The distinct cells of a sweep CSV, in file order."""
    seen, out = set(), []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = tuple(row[c] for c in ("metric", "data", "n", "q", "d", "k"))
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


def knn(torch, base, queries, k, metric, chunk_rows):
    outs = []
    base_sq = (base * base).sum(1) if metric in ("squared_l2", "l2") else None
    for q0 in range(0, queries.shape[0], chunk_rows):
        q = queries[q0:q0 + chunk_rows]
        if base_sq is not None:
            d = (q * q).sum(1, keepdim=True) + base_sq[None, :] - 2.0 * (q @ base.T)
        else:
            d = torch.cdist(q, base, p=P_OF[metric])
        outs.append(torch.topk(d, k, dim=1, largest=False, sorted=True))
    return outs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep_csv", help="the CSV gknn bench --sweep --csv wrote")
    ap.add_argument("--out", default="torch_suite.csv")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--long-run", type=float, default=3.0, help="seconds: a cell slower than this is timed once")
    ap.add_argument("--chunk-bytes", type=float, default=8e9)
    args = ap.parse_args()
    torch = tc.import_torch_or_exit("torch_suite: SKIPPED: {reason}", exit_code=0, stream=sys.stdout)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.cuda.get_device_name(0)
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    for metric, data, n, q, d, k in cells(args.sweep_csv):
        n, q, d, k = int(n), int(q), int(d), int(k)
        note, ms, runs = "", "", 0
        base = queries = None
        try:
            if data == "integer":
                base = torch.randint(0, 256, (n, d), generator=gen, device="cuda").float()
                queries = torch.randint(0, 256, (q, d), generator=gen, device="cuda").float()
            else:
                base = torch.rand((n, d), generator=gen, device="cuda")
                queries = torch.rand((q, d), generator=gen, device="cuda")
            chunk_rows = max(1, min(q, int(args.chunk_bytes // (n * 4 * 3))))
            times = tc.cuda_times_ms(lambda: knn(torch, base, queries, k, metric, chunk_rows), warmup=1,
                                     reps=args.reps, stop_after_ms=args.long_run * 1e3)
            ms, runs = f"{statistics.median(times):.4f}", len(times)
        except RuntimeError as e:  # out of memory on the largest cells
            note = tc.error_note("torch: ", e)
        base = queries = None
        torch.cuda.empty_cache()
        rows.append([device, metric, data, n, q, d, k, ms, runs, note])
        print(",".join(str(v) for v in rows[-1]), flush=True)
    tc.write_csv(args.out, ["device", "metric", "data", "n", "q", "d", "k", "torch_ms", "runs", "note"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
