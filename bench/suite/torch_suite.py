#!/usr/bin/env python3
"""torch_suite.py: PyTorch's exact kNN on the cells of a `gknn bench --sweep --csv` file (the benchmark suite),
for the speedup-over-torch heat maps of report.py. Same data family as the sweep (integers 0..255 or uniform
floats in [0, 1), drawn by torch: not the same values), float32 with TF32 off.

Per cell: squared L2 by one matmul per query chunk (|q|^2 + |x|^2 - 2 q.x) and torch.topk; L1 / Linf / Lp by
torch.cdist(p) and torch.topk. Writes device,metric,data,n,q,d,k,torch_ms,runs,note (torch_ms empty with the error
in the note column when torch fails, e.g. out of memory), the whole file again after every cell (through a rename).

The suite runs in slices (bench/suite/run.sh --budget): with --resume the rows already in --out are kept and only
the cells they lack on this device are measured (a cell torch failed on counts as done: it would fail again);
with --budget SECONDS no cell starts once that many seconds have passed (a cell stops repeating after --long-run
seconds, so the overrun is a few of those at most).
"""
import argparse
import csv
import os
import statistics
import sys
import time
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


HEADER = ["device", "metric", "data", "n", "q", "d", "k", "torch_ms", "runs", "note"]


def earlier_rows(path):
    """The rows of an earlier run's --out (none when the file does not exist), as lists in HEADER's order."""
    if not Path(path).exists():
        return []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != HEADER:
            sys.exit(f"torch_suite: {path} line 1: expected the header {','.join(HEADER)} (drop --resume to start over)")
        return [[r[c] for c in HEADER] for r in reader]


def write_atomically(path, rows):
    """The whole CSV through a temporary file renamed onto `path`: a run killed mid-cell keeps the cells before."""
    temporary = f"{path}.tmp-torch"
    with open(temporary, "w") as f:
        f.write("\n".join([",".join(HEADER)] + [",".join(str(v) for v in row) for row in rows]) + "\n")
    os.replace(temporary, path)


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
    ap.add_argument("--resume", action="store_true", help="keep the rows of --out, measure only the cells it lacks")
    ap.add_argument("--budget", type=float, default=float("inf"), help="seconds: no cell starts after them")
    args = ap.parse_args()
    started = time.monotonic()
    torch = tc.import_torch_or_exit("torch_suite: SKIPPED: {reason}", exit_code=0, stream=sys.stdout)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.cuda.get_device_name(0)
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = earlier_rows(args.out) if args.resume else []
    done = {tuple(str(v) for v in row[:7]) for row in rows}
    todo = [c for c in cells(args.sweep_csv) if (device, *c) not in done]
    left = 0
    for metric, data, n, q, d, k in todo:
        if time.monotonic() - started > args.budget:
            left += 1
            continue
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
        write_atomically(args.out, rows)
    print(f"torch_suite: {len(todo) - left} cells measured now, {len(rows) - (len(todo) - left)} from earlier runs, "
          f"{left} left (budget {args.budget:g} s) in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
