"""torch_common.py: what the PyTorch peer scripts of bench/gpu share (timing, options, torch import, output).

torch is imported lazily (inside the functions, or by import_torch_or_exit), never at module level, so that the
scripts' --help works on a machine without torch. Scripts in sub-folders put bench/gpu on sys.path to import this.
"""
import statistics
import sys

# Exit status of a torch_topk.py script that measured nothing (torch missing or no CUDA device): not 0, so that a
# driver notices, and not 1/2 (an exception / an argparse error).
EXIT_NOT_MEASURED = 3


def import_torch_or_exit(message="torch_topk.py: {reason}; nothing measured", exit_code=EXIT_NOT_MEASURED,
                         stream=None):
    """Return the torch module when it is installed and sees a CUDA device; otherwise print message (its {reason}
    says which of the two failed) to stream (default stderr) and exit the process with exit_code."""
    try:
        import torch
    except ImportError:
        reason = "torch is not installed"
    else:
        if torch.cuda.is_available():
            return torch
        reason = "torch sees no CUDA device"
    print(message.format(reason=reason), file=sys.stderr if stream is None else stream)
    sys.exit(exit_code)


def add_common_args(parser, *, reps, warmup, quick_help="small shapes (a smoke test)"):
    """Add the options every torch_topk.py script has, with the script's defaults: --quick, --reps (timed runs),
    --warmup (untimed runs before them) and --device (CUDA device index). Each script adds its own --csv and its
    extra options around this call, so that its --help lists them in the order it always has."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    add_timing_args(parser, reps=reps, warmup=warmup)


def add_timing_args(parser, *, reps, warmup):
    """Add --reps, --warmup and --device (see add_common_args) for a script whose own options sit between
    --quick and them."""
    parser.add_argument("--reps", type=int, default=reps)
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--device", type=int, default=0)


def cuda_times_ms(fn, warmup, reps, device=None, stop_after_ms=None):
    """Call fn() warmup times untimed, then up to reps times, each timed alone with CUDA events on the current
    stream; return the list of times in milliseconds. device: what torch.cuda.synchronize waits for (None: the
    current device). stop_after_ms: stop early after a run longer than this (so a slow case costs one run)."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize(device)
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        result = fn()
        stop.record()
        torch.cuda.synchronize(device)
        times.append(start.elapsed_time(stop))
        del result  # freed only after the timed run, so the freeing is not part of it
        if stop_after_ms is not None and times[-1] > stop_after_ms:
            break
    return times


def time_cuda(fn, warmup, reps, device=None):
    """Median of cuda_times_ms(fn, warmup, reps, device), in milliseconds: robust to the odd slow run."""
    return statistics.median(cuda_times_ms(fn, warmup, reps, device))


def time_topk_smallest(x, k, sorted_, warmup, reps, device, failure_prefix):
    """Time torch.topk(x, k, dim=1, largest=False, sorted=sorted_) with time_cuda; return (ms, gkeys_per_s, note),
    gkeys_per_s counting every element of x. When the call raises a RuntimeError (e.g. out of memory) the case is
    reported, not fatal: (-1.0, 0.0, error_note(failure_prefix, error))."""
    import torch
    try:
        ms = time_cuda(lambda: torch.topk(x, k, dim=1, largest=False, sorted=sorted_), warmup, reps, device)
    except RuntimeError as e:
        return -1.0, 0.0, error_note(failure_prefix, e)
    return ms, (x.numel() / (ms * 1e6) if ms > 0 else 0.0), ""


def error_note(prefix, error):
    """prefix + the first line of error's message, with commas made semicolons so it fits one CSV field."""
    return prefix + str(error).splitlines()[0].replace(",", ";")


def write_lines(path, lines):
    """Write lines to path, one per line (with a final newline)."""
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_csv(path, header, rows):
    """Write a CSV to path: header (column names), then rows (sequences of values, written with str, so floats
    keep their full repr); then say so on stdout. Values must not contain commas (see error_note)."""
    write_lines(path, [",".join(header)] + [",".join(str(v) for v in row) for row in rows])
    print(f"wrote {path}")
