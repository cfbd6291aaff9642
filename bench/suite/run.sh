#!/usr/bin/env bash
# bench/suite/run.sh [--quick] [--budget SECONDS|none] [BUILD=build-device] [OUT=bench/results]: the benchmark suite
# of issue 13 on the GPU: gknn (Auto and every distance/selection pair per cell, `gknn bench --sweep`), torch on the
# same cells (torch_suite.py), then the table and heat maps (report.py). The fastest pair of every cell also goes to
# OUT/plan_table_measured.csv, ready to be checked into src/plan/plan_table.csv (docs/planner.md).
#
# The full grid (n 16k..4M, q 1..10k, d 2..960, k 1..1000, squared L2 on integer and float data: 1536 cells) takes
# hours, and a device command may run 10 minutes. So each call measures a slice and the files accumulate: the sweep
# and torch resume from OUT/suite_gknn.csv and OUT/suite_torch.csv (only the cells they lack are measured), and
# --budget (default 480 s: one 10-minute device command with margin for the start, the build check and the report)
# bounds the call: 3/4 of it for gknn's sweep (no cell starts whose forecast would end past it), what is left but
# 20 s for torch, then the report over whatever cells exist (missing ones counted in suite.md, grey in the heat
# maps). Run the same command again until it says no cell is left. Cells are keyed by the device's name: keep one
# card kind for a whole grid (on the lent machines, ask for nvidia-h100-x1); report.py reports one device.
# --budget none runs the whole grid in one go. --quick measures a subset of the same grid (its cells count for the
# full grid too). SUITE_N/SUITE_Q/SUITE_D/SUITE_K/SUITE_METRICS/SUITE_DATA override the grid; SUITE_CAP the factor
# past which a slow candidate is timed once (gknn --sweep-cap, default 4); a candidate capped in a smaller cell (same
# n, d, k and a smaller q, or same q, d, k and a smaller n) is not run in the larger one but recorded as skipped (on
# the H200 one such `insertion` call took 87.5 s at n=262144 q=10000 d=8 k=1000): SUITE_NO_PRUNE=1 runs them anyway
# (gknn --sweep-no-prune); SUITE_BACKEND=cpu tries the script without a GPU (torch_suite.py then needs torch with
# CUDA, or says SKIPPED). --recheck-auto times Auto again in every cell OUT/suite_gknn.csv completed, side by side
# with that cell's fastest pair (gknn --sweep-auto-only --sweep-best-from, runs alternating, into OUT/suite_auto.csv,
# resumable in slices like the sweep; the cells where Auto was more than SUITE_RECHECK_ABOVE (default 1.1) times
# the best first): Auto after the planner or a kernel changed, without every pair, and a fair ratio where the best
# time was the least of a dozen short medians; whenever that file exists the report takes its times for the cells
# it holds (report.py --auto-from).
set -euo pipefail
cd "$(dirname "$0")/../.."
usage="usage: bench/suite/run.sh [--quick] [--recheck-auto] [--budget SECONDS|none] [BUILD] [OUT]"
quick=0 budget=480 recheck=0
while (($#)); do
  case $1 in
    --quick) quick=1; shift ;;
    --recheck-auto) recheck=1; shift ;;
    --budget) [[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }; budget=$2; shift 2 ;;
    --budget=*) budget=${1#--budget=}; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) echo "run.sh: unknown option $1; $usage" >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ $budget == none || $budget =~ ^[0-9]+$ ]] || { echo "run.sh: --budget takes whole seconds or none" >&2; exit 2; }
build=${1:-build-device}
out=${2:-bench/results}
if ((quick)); then
  n=${SUITE_N:-16384,262144,1048576} q=${SUITE_Q:-1,64,1024} d=${SUITE_D:-8,32,128} k=${SUITE_K:-10,100}
else
  n=${SUITE_N:-16384,262144,1048576,4194304} q=${SUITE_Q:-1,64,1024,10000} d=${SUITE_D:-2,3,8,32,128,960}
  k=${SUITE_K:-1,10,100,1000}
fi
metrics=${SUITE_METRICS:-squared_l2} data=${SUITE_DATA:-integer,float}
sweep_budget=() torch_budget=() prune=()
[[ ${SUITE_NO_PRUNE:-0} == 1 ]] && prune=(--sweep-no-prune)
if [[ $budget != none ]]; then
  sweep_budget=(--sweep-budget $((budget * 3 / 4)))
fi
mkdir -p "$out"
# The grid's sweep (the full one, or Auto alone with --recheck-auto) and its report; both modes resume their CSV.
sweep=("$build/tools/gknn" bench --sweep --backend "${SUITE_BACKEND:-cuda}" --sweep-n "$n" --sweep-q "$q" --sweep-d "$d"
       --sweep-k "$k" --sweep-metrics "$metrics" --sweep-data "$data" --repeat 3 --warmup 1 --resume "${sweep_budget[@]}")
report() {
  [[ -s $out/suite_gknn.csv ]] || return 0  # absent until the first cell is measured
  local auto=()
  [[ -s $out/suite_auto.csv ]] && auto=(--auto-from "$out/suite_auto.csv")
  python3 bench/suite/report.py "$out/suite_gknn.csv" "$out/suite_torch.csv" --out-dir "$out" --grid-n "$n" \
    --grid-q "$q" --grid-d "$d" --grid-k "$k" --grid-metric "$metrics" --grid-data "$data" "${auto[@]}"
}
if ((recheck)); then
  [[ -s $out/suite_gknn.csv ]] || { echo "run.sh: --recheck-auto needs $out/suite_gknn.csv (a full sweep's cells)" >&2; exit 2; }
  # The suspect cells first (Auto past SUITE_RECHECK_ABOVE, default 1.1, times the cell's best pair in the full
  # sweep), then, in what is left of the budget, every other cell.
  recheck_cmd=("${sweep[@]}" --sweep-auto-only --sweep-best-from "$out/suite_gknn.csv" --csv "$out/suite_auto.csv")
  "${recheck_cmd[@]}" --sweep-recheck-above "${SUITE_RECHECK_ABOVE:-1.1}" | tee "$out/suite_auto.log"
  if ! grep -q '^continue ' "$out/suite_auto.log"; then
    if [[ $budget == none ]]; then
      "${recheck_cmd[@]}" | tee -a "$out/suite_auto.log"
    elif ((budget * 3 / 4 - SECONDS > 30)); then
      "${recheck_cmd[@]}" --sweep-budget $((budget * 3 / 4 - SECONDS)) | tee -a "$out/suite_auto.log"
    else
      echo "continue     (the cells within ${SUITE_RECHECK_ABOVE:-1.1}x are re-checked; the others next)" >>"$out/suite_auto.log"
    fi
  fi
  report
  if grep -q '^continue ' "$out/suite_auto.log"; then
    echo "suite: cells left to re-check; the next call: bench/suite/run.sh --recheck-auto --budget $budget $build $out"
  else
    echo "suite: Auto re-checked in every measured cell of the grid ($out/suite_auto.csv)"
  fi
  exit 0
fi
"${sweep[@]}" --sweep-cap "${SUITE_CAP:-4}" "${prune[@]}" --csv "$out/suite_gknn.csv" \
  --out "$out/plan_table_measured.csv" | tee "$out/suite_gknn.log"
if [[ $budget != none ]]; then
  torch_budget=(--budget $((budget - SECONDS - 20 > 0 ? budget - SECONDS - 20 : 0)))
fi
python3 bench/suite/torch_suite.py "$out/suite_gknn.csv" --out "$out/suite_torch.csv" --resume "${torch_budget[@]}" |
  tee "$out/suite_torch.log"
report
if grep -q '^continue ' "$out/suite_gknn.log" || grep -q ' [1-9][0-9]* left ' "$out/suite_torch.log"; then
  again=(bench/suite/run.sh)
  ((quick)) && again+=(--quick)
  echo "suite: cells left (gknn: $(grep '^cells ' "$out/suite_gknn.log" | sed 's/^cells *//'); torch:" \
    "$(grep -o '[0-9]* left' "$out/suite_torch.log" || echo skipped)); the next call:" \
    "${again[*]} --budget $budget $build $out"
else
  echo "suite: every cell of the grid is measured on this device ($out/suite.md)"
fi
