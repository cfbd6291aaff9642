#!/usr/bin/env python3
"""torch_peer.py: PyTorch's exact kNN on the shapes of bench_gpu.cpp, for a side-by-side row in the same run.

Two peers per configuration, both exact and in float32 (TF32 switched off, as in gknn's cuBLAS path):
  gemm+topk : |q|^2 + |x|^2 - 2 q.x^T (one matmul per query chunk), then torch.topk(k, largest=False)
  cdist+topk: torch.cdist (p=2, "donot_use_mm" so it computes directly), then torch.topk
Query chunks keep the distance matrix under --chunk-bytes. Same data family as bench_gpu.cpp (uniform integers
0..255, drawn by torch, so not the same values). Output: markdown rows, also written to --out.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/gpu, where torch_common.py lives
import torch_common as tc  # noqa: E402 (needs the path above)

CONFIGS = {
    "garcia": (16384, 4096, 128, 16),
    "sift10k": (10000, 100, 128, 100),
    "sift1m": (1000000, 10000, 128, 100),
    "sift1m_k1000": (1000000, 10000, 128, 1000),
}


def run(torch, base, queries, k, method, chunk_rows):
    outs = []
    base_sq = (base * base).sum(1)
    for q0 in range(0, queries.shape[0], chunk_rows):
        q = queries[q0:q0 + chunk_rows]
        if method == "gemm+topk":
            d = (q * q).sum(1, keepdim=True) + base_sq[None, :] - 2.0 * (q @ base.T)
            d.clamp_(min=0)
        else:
            d = torch.cdist(q, base, p=2.0, compute_mode="donot_use_mm_for_euclid_dist").square_()
        outs.append(torch.topk(d, k, dim=1, largest=False, sorted=True))
    return outs


def measure(torch, base, queries, k, method, chunk_rows, repeats, long_run_s):
    """(median ms, runs timed) of run() after one warm-up run; stops after the first run longer than long_run_s."""
    times = tc.cuda_times_ms(lambda: run(torch, base, queries, k, method, chunk_rows), warmup=1, reps=repeats,
                             stop_after_ms=long_run_s * 1e3)
    return statistics.median(times), len(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="garcia,sift10k,sift1m")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--long-run", type=float, default=3.0)
    ap.add_argument("--chunk-bytes", type=float, default=8e9)
    ap.add_argument("--out", default="torch_peer.md")
    args = ap.parse_args()
    # A skip, not a failure: scripts/device-check.sh runs this on machines that may lack torch.
    torch = tc.import_torch_or_exit("torch_peer: SKIPPED: {reason}", exit_code=0, stream=sys.stdout)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    lines = [f"# torch peer (torch {torch.__version__}, {torch.cuda.get_device_name(0)}, TF32 off)", "",
             "| config | method | ms (median) | queries/s | runs |", "|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    gen = torch.Generator(device="cuda").manual_seed(1)
    for name in args.configs.split(","):
        nb, nq, dim, k = CONFIGS[name]
        base = torch.randint(0, 256, (nb, dim), generator=gen, device="cuda").float()
        queries = torch.randint(0, 256, (nq, dim), generator=gen, device="cuda").float()
        chunk_rows = max(1, min(nq, int(args.chunk_bytes // (nb * 4 * 3))))  # distance + topk scratch
        for method in ("gemm+topk", "cdist+topk"):
            try:
                ms, runs = measure(torch, base, queries, k, method, chunk_rows, args.repeats, args.long_run)
                line = f"| {name} | torch {method} | {ms:.2f} | {nq / (ms * 1e-3):.0f} | {runs} |"
            except RuntimeError as e:  # e.g. out of memory
                line = f"| {name} | torch {method} | error: {str(e).splitlines()[0]} | | |"
                torch.cuda.empty_cache()
            lines.append(line)
            print(line, flush=True)
        del base, queries
        torch.cuda.empty_cache()
    tc.write_lines(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
