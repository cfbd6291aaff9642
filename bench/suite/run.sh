#!/usr/bin/env bash
# bench/suite/run.sh [--quick] [BUILD=build-device] [OUT=bench/results]: the benchmark suite of issue 13 in one run
# on the GPU: gknn (Auto and every distance/selection pair per cell, `gknn bench --sweep`), torch on the same cells
# (torch_suite.py), then the table and heat maps (report.py). The fastest pair of every cell also goes to
# OUT/plan_table_measured.csv, ready to be checked into src/plan/plan_table.csv (docs/planner.md).
# The full grid (n 16k..4M, q 1..10k, d 2..960, k 1..1000, squared L2 on integer and float data) takes hours;
# --quick measures a subset in minutes. SUITE_N/SUITE_Q/SUITE_D/SUITE_K/SUITE_METRICS/SUITE_DATA override the grid.
set -euo pipefail
cd "$(dirname "$0")/../.."
quick=0
[[ ${1:-} == --quick ]] && quick=1 && shift
build=${1:-build-device}
out=${2:-bench/results}
if ((quick)); then
  n=${SUITE_N:-16384,262144,1048576} q=${SUITE_Q:-1,64,1024} d=${SUITE_D:-8,32,128} k=${SUITE_K:-10,100}
else
  n=${SUITE_N:-16384,262144,1048576,4194304} q=${SUITE_Q:-1,64,1024,10000} d=${SUITE_D:-2,3,8,32,128,960}
  k=${SUITE_K:-1,10,100,1000}
fi
mkdir -p "$out"
"$build/tools/gknn" bench --sweep --backend cuda --sweep-n "$n" --sweep-q "$q" --sweep-d "$d" --sweep-k "$k" \
  --sweep-metrics "${SUITE_METRICS:-squared_l2}" --sweep-data "${SUITE_DATA:-integer,float}" --repeat 3 --warmup 1 \
  --csv "$out/suite_gknn.csv" --out "$out/plan_table_measured.csv"
python3 bench/suite/torch_suite.py "$out/suite_gknn.csv" --out "$out/suite_torch.csv"
python3 bench/suite/report.py "$out/suite_gknn.csv" "$out/suite_torch.csv" --out-dir "$out"
