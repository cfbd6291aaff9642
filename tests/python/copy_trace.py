"""The CUDA memory copies a piece of code makes, with their directions and byte counts.

torch's profiler records GPU activity through CUPTI, which sees every copy of the process (gknn's own cudaMemcpy*
calls from its threads included, not only torch's). Shared by tests/python/test_gpu.py and
bench/gpu/python_search.py to show that a search of CUDA tensors moves nothing between host and device.
"""
import json
import os
import tempfile

HOST_DEVICE = ("HtoD", "DtoH")


class Trace:
    """copies: [(direction, bytes)] with direction "HtoD", "DtoH", "DtoD", ... as CUPTI names it; kernels: the
    number of kernel launches seen (a trace without them did not see the work, and proves nothing)."""

    def __init__(self, copies, kernels):
        self.copies, self.kernels = copies, kernels

    def host_device_bytes(self):
        return sum(b for direction, b in self.copies if direction in HOST_DEVICE)

    def largest_host_device(self):
        return max((b for direction, b in self.copies if direction in HOST_DEVICE), default=0)

    def summary(self):
        by_direction = {}
        for direction, b in self.copies:
            count, total = by_direction.get(direction, (0, 0))
            by_direction[direction] = (count + 1, total + b)
        parts = [f"{d}: {c} copies, {t} bytes" for d, (c, t) in sorted(by_direction.items())]
        return f"{self.kernels} kernels; " + ("; ".join(parts) if parts else "no memcpy")


def chrome_events(prof):
    """The events of a finished torch.profiler.profile, as its Chrome trace lists them (dicts with "name", "cat",
    "ph", "ts", "dur", "args"): kernels ("kernel"), copies ("gpu_memcpy"), host calls ("cuda_runtime", ...).
    Shared by bench/gpu/trace_search.py and bench/gpu/fused_shapes.py."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def traced(torch, run):
    """(run()'s result, Trace of what the CUDA devices did while it ran). Under compute-sanitizer
    (GKNN_TEST_SANITIZE=1, scripts/sanitize-gpu-tests.sh) the calling test is skipped: the sanitizer holds the CUDA
    callback API, so CUPTI cannot subscribe (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) and sees nothing."""
    if os.environ.get("GKNN_TEST_SANITIZE", "") not in ("", "0"):
        import pytest  # only the test suite runs sanitized

        pytest.skip("no CUPTI trace under compute-sanitizer (GKNN_TEST_SANITIZE=1): both need the callback API")
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        result = run()
        torch.cuda.synchronize()
    events = chrome_events(prof)
    copies, kernels = [], 0
    for event in events:
        category = event.get("cat", "")
        if category == "gpu_memcpy":  # name e.g. "Memcpy HtoD (Pageable -> Device)"
            size = event.get("args", {}).get("bytes")
            if size is None:
                raise RuntimeError(f"profiler memcpy event without a byte count: {event}")
            copies.append((event["name"].split()[1], int(size)))
        elif category == "kernel":
            kernels += 1
    return result, Trace(copies, kernels)
