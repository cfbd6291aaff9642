#!/usr/bin/env bash
# run-default.sh BUILD_DIR: the main job of `make run`.
#
# 1. A SIFT-shaped data set: 100,000 base vectors and 1,000 queries of dimension 128 with integer values 0..255,
#    drawn from Gaussian clusters with a fixed seed, and its exact k = 100 ground truth by the float64 CPU reference
#    (generated once, cached under BUILD_DIR/data). Searched with the default (auto) backend; recall must be 1.0.
# 2. When that search ran on CUDA (a GPU machine): the SIFT1M shape, 1,000,000 x 128 uint8 and 10,000 queries,
#    k = 100 (generated once, cached; no full ground truth, which would take the CPU too long), checked against the
#    float64 CPU reference on a fixed sample of 200 queries: their ids must be identical.
#
# Every search prints its phases apart: device initialisation, the upload of the base, a first (cold) search, the
# warm search time (median of --repeat searches; on the GPU device time by CUDA events), the download, and queries/s
# from the warm search. GKNN_RUN_REPEAT (default 5) sets the warm searches; GKNN_RUN_SIFT1M=always|never|auto
# (default auto: only on CUDA) the second job.
set -euo pipefail

build=${1:-build}
gknn=$build/tools/gknn
data=$build/data
repeat=${GKNN_RUN_REPEAT:-5}
sift1m=${GKNN_RUN_SIFT1M:-auto}
mkdir -p "$data"

# generate NAME ROWS QUERIES [GEN OPTIONS...]: the SIFT-like set NAME (uint8 Gaussian clusters, seed 42), once.
generate() {
  local name=$1 rows=$2 queries=$3
  shift 3
  [[ -f $data/$name.complete ]] && return 0
  echo "== generating $name (once, then cached in $data)"
  "$gknn" gen --rows "$rows" --dim 128 --distribution clusters --clusters 64 --seed 42 --uint8 \
    -o "$data/$name.base.bvecs" --queries "$queries" --queries-out "$data/$name.queries.bvecs" "$@"
  touch "$data/$name.complete"
}

# search NAME [SEARCH OPTIONS...]: gknn search of the set NAME, k = 100, backend auto; its output in $output.
search() {
  local name=$1
  shift
  echo "== gknn search: $name, k=100, squared L2, backend auto, $repeat warm searches"
  local rc=0
  output=$("$gknn" search --base "$data/$name.base.bvecs" --query "$data/$name.queries.bvecs" -k 100 \
    --backend auto --repeat "$repeat" "$@") || rc=$?
  echo "$output"
  return $rc
}

small=sift-shaped-100000x128-q1000-clusters-seed42-k100
# The ground truth comes from the float64 CPU reference (about a minute on 2 cores, once).
generate "$small" 100000 1000 --groundtruth-out "$data/$small.groundtruth.ivecs" -k 100
search "$small" --groundtruth "$data/$small.groundtruth.ivecs"
# The data are integers, so every float32 distance is exact: anything but recall 1.0 is a bug.
if ! grep -q "^recall@100 (ids)      1.000000" <<<"$output"; then
  echo "make run: FAILED: the search is not exact (recall below 1.0)" >&2
  exit 1
fi
echo "== exact: recall 1.0 against the float64 oracle"

if [[ $sift1m == never ]] || { [[ $sift1m == auto ]] && ! grep -q "^backend      cuda" <<<"$output"; }; then
  echo "== SIFT1M shape skipped: the search ran on the CPU (GKNN_RUN_SIFT1M=always runs it anyway)"
  exit 0
fi
large=sift1m-shaped-1000000x128-q10000-clusters-seed42
generate "$large" 1000000 10000
if ! search "$large" --oracle-sample 200; then
  echo "make run: FAILED: the SIFT1M-shaped search differs from the float64 oracle on the sampled queries" >&2
  exit 1
fi
echo "== exact: the 200 sampled queries have the float64 oracle's ids"
