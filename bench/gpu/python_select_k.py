"""python_select_k.py: gknn.select_k on a torch CUDA tensor next to torch.topk, same tensor, same run.

Uniform float32 values (no ties, so both orders are the same answer), rows x cols on the device; one warm-up, then
--reps calls of each, timed with CUDA events on the caller's stream around the synchronous call (gknn) or the
call plus a synchronisation (torch). Checks that gknn's values equal topk's (sorted=True) and its indices too.
Usage: PYTHONPATH=build-device/python python3 bench/gpu/python_select_k.py [--rows 10000 --cols 100000 --k 100]
"""
import argparse
import sys

import gknn
from torch_common import time_cuda


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--cols", type=int, default=100000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    import torch

    torch.manual_seed(0)
    values = torch.rand((args.rows, args.cols), device="cuda", dtype=torch.float32)
    print(f"{torch.cuda.get_device_name()}: {args.rows} x {args.cols} float32, k = {args.k}, median of {args.reps}")
    ok = True
    for largest in (False, True):
        run_gknn = lambda: gknn.select_k(values, args.k, largest=largest)  # noqa: E731
        run_topk = lambda: torch.topk(values, args.k, dim=1, largest=largest, sorted=True)  # noqa: E731
        g_ms = time_cuda(run_gknn, 1, args.reps)
        t_ms = time_cuda(run_topk, 1, args.reps)
        (V, I), ref = run_gknn(), run_topk()
        same = torch.equal(V, ref.values) and torch.equal(I, ref.indices)
        ok &= same
        print(f"largest={largest!s:5}  gknn.select_k {g_ms:8.3f} ms   torch.topk {t_ms:8.3f} ms   "
              f"topk/gknn {t_ms / g_ms:5.2f}   identical: {same}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
