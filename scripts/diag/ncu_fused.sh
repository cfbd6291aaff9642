#!/usr/bin/env bash
# ncu_fused.sh [BUILD] [CONFIG]: one profiled launch of the fused distance + selection kernel at a bench shape
# (default sift1m: 1M x 128 uint8 base, 10k queries, k = 100), for issue 13's next step: where the kernel's time
# goes (stall reasons, issue slots, occupancy, the hottest SASS lines), measured instead of modelled.
# Writes to $OUT: fused.ncu-rep (open in Nsight Compute), fused_details.txt (every section of the details page) and
# fused_hot.txt (the 40 SASS lines with the most warp-stall samples, with their top stall reasons) and
# fused_hot_cuda.txt (the 50 CUDA source lines with the most samples).
# The third launch of the kernel is profiled (warm-up and the first timed run skipped).
set -uo pipefail
build=${1:-build-device} config=${2:-sift1m}
out=${OUT:-/tmp/ncu-fused}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$ncu" --kernel-name regex:fused_kernel --launch-skip 2 --launch-count 1 --set full --import-source yes \
  -o "$out/fused" -f "$build/bench/gknn_gpu_bench" --configs "$config" --filter '^fused/auto$' --repeats 3 \
  >"$out/ncu_run.log" 2>&1 || { tail -30 "$out/ncu_run.log"; exit 1; }
"$ncu" -i "$out/fused.ncu-rep" --page details >"$out/fused_details.txt" 2>&1
"$ncu" -i "$out/fused.ncu-rep" --page source --csv --print-source sass >"$out/fused_source.csv" 2>/dev/null
# The same samples by CUDA source line (the library builds with -lineinfo; --import-source put the files in the
# report): which part of fused.cu (walk, appends, keep_best's sorts, the merges) holds the stalls.
"$ncu" -i "$out/fused.ncu-rep" --page source --csv --print-source cuda >"$out/fused_cuda.csv" 2>"$out/fused_cuda.err"
python3 - "$out/fused_cuda.csv" >"$out/fused_hot_cuda.txt" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], newline="")) if r]
head = next((i for i, r in enumerate(rows) if "Source" in r and any(c.startswith("Warp Stall Sampling (All") for c in r)), None)
if head is None:
    print("no CUDA source table in the export"); sys.exit(0)
cols = rows[head]
src, line = cols.index("Source"), next((i for i, c in enumerate(cols) if c in ("Line", "#", "Line Number")), None)
total = next(i for i, c in enumerate(cols) if c.startswith("Warp Stall Sampling (All"))
inst = next((i for i, c in enumerate(cols) if c == "Instructions Executed"), None)
table, file_name = [], ""
for r in rows[head + 1:]:
    if len(r) != len(cols):
        file_name = r[0] if r else file_name  # a file's header line
        continue
    try:
        table.append((float(r[total] or 0), float(r[inst] or 0) if inst is not None else 0.0, r))
    except ValueError:
        pass
whole = sum(t for t, _, _ in table) or 1.0
print(f"{len(table)} CUDA lines, {whole:.0f} warp-stall samples; the 50 hottest (samples %, instructions, line):")
for t, n, r in sorted(table, key=lambda x: -x[0])[:50]:
    where = r[line] if line is not None else "?"
    print(f"{100 * t / whole:5.1f}%  {n:14.0f}  {where:>5}  {r[src].strip()[:100]}")
PY
python3 - "$out/fused_source.csv" >"$out/fused_hot.txt" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
head = next((i for i, r in enumerate(rows) if any("Source" == c or c.startswith("Address") for c in r)), None)
if head is None:
    print("no source table in the export"); sys.exit(0)
cols = rows[head]
def col(name):
    return next((i for i, c in enumerate(cols) if c == name), None)
src = col("Source")
total = col("Warp Stall Sampling (All Samples)") or col("Warp Stall Sampling (All Samples)".replace("(All ", "(All"))
stalls = [i for i, c in enumerate(cols) if c.startswith("stall_") or c.startswith("Stall ")]
table = []
for r in rows[head + 1:]:
    try:
        table.append((float(r[total] or 0), r))
    except (TypeError, ValueError, IndexError):
        pass
whole = sum(t for t, _ in table) or 1.0
print(f"{len(table)} SASS lines, {whole:.0f} warp-stall samples; the 40 hottest:")
for t, r in sorted(table, key=lambda x: -x[0])[:40]:
    reasons = sorted(((float(r[i] or 0), cols[i]) for i in stalls if r[i] not in ("", "0")), reverse=True)[:3]
    why = ", ".join(f"{n} {v:.0f}" for v, n in reasons)
    print(f"{100 * t / whole:5.1f}%  {r[src][:90]:90s}  {why}")
PY
grep -E 'Duration|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Compute \(SM\) Throughput|Memory Throughput|Warp Cycles Per Issued' "$out/fused_details.txt" | head -20
head -25 "$out/fused_hot.txt"
head -40 "$out/fused_hot_cuda.txt"
