#!/usr/bin/env bash
# scale_cli_test.sh GKNN [MPIEXEC]: `gknn search` on several shards writes the same bytes as one search:
# --cpu-shards N (sharded and --replicate), and with MPIEXEC, `mpiexec -n 1..4 gknn search` (sharded and
# --replicate), on uint8 data with ties (exact in float32: every distance algorithm agrees bit for bit); and
# `gknn join` on CPU shards writes the bytes of the single join.
set -euo pipefail
gknn=$1
mpiexec=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
same() { cmp -s "$1" "$2" || fail "$3: $1 differs from $2"; }

"$gknn" gen --rows 403 --dim 8 --uint8 --distribution clusters --clusters 3 -o base.bvecs --queries 29 \
  --queries-out query.bvecs >/dev/null
# reference output of one search: reference NAME METRIC K
reference() {
  "$gknn" search --base base.bvecs --query query.bvecs -k "$3" --metric "$2" --backend cpu --no-progress \
    -o "$1.npy" --distances-out "$1_d.npy" >/dev/null
}
# check NAME METRIC K LAUNCHER... -- OPTIONS...: the launched search writes NAME's bytes
check() {
  local name=$1 metric=$2 k=$3
  shift 3
  local launcher=()
  while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
  shift
  "${launcher[@]}" "$gknn" search --base base.bvecs --query query.bvecs -k "$k" --metric "$metric" --backend cpu \
    --no-progress -o got.npy --distances-out got_d.npy "$@" >/dev/null
  same got.npy "$name.npy" "$metric k=$k ${launcher[*]} $*"
  same got_d.npy "${name}_d.npy" "$metric k=$k ${launcher[*]} $* (distances)"
}

for metric in squared_l2 l1 inner_product; do
  for k in 1 25 500; do
    reference ref "$metric" "$k"
    for shards in 2 5; do
      check ref "$metric" "$k" -- --cpu-shards "$shards" --shard
      check ref "$metric" "$k" -- --cpu-shards "$shards" --replicate
    done
  done
done
# The self-join on shards writes the bytes of the single join (3-D points: the grid path; 12-D: brute force).
"$gknn" gen --rows 700 --dim 3 --distribution clusters --clusters 4 -o points.fvecs >/dev/null
"$gknn" gen --rows 300 --dim 12 --uint8 -o points12.bvecs >/dev/null
inputs="points.fvecs points12.bvecs"
if "$gknn" info | grep -q "CPU kd-tree MISSING"; then  # no nanoflann: mode cpu is refused on the grid path
  echo "note: this build has no CPU kd-tree (libnanoflann-dev): the 3-D join is skipped"
  inputs=points12.bvecs
fi
for input in $inputs; do
  "$gknn" join --input "$input" -k 9 --mode cpu --no-progress -o join.npy --distances-out join_d.npy >/dev/null
  for layout in "--cpu-shards 3 --shard" "--cpu-shards 2 --replicate"; do
    # shellcheck disable=SC2086
    "$gknn" join --input "$input" -k 9 --mode cpu --no-progress -o got.npy --distances-out got_d.npy $layout \
      >join.log
    grep -q "shards" join.log || fail "join $input $layout: no line naming the shards"
    same got.npy join.npy "join $input $layout"
    same got_d.npy join_d.npy "join $input $layout (distances)"
  done
done
"$gknn" join --input points.fvecs --queries points.fvecs -k 3 --cpu-shards 2 --no-progress >join.log 2>&1 &&
  fail "join --queries with --cpu-shards was accepted"
grep -q "R ⋈ S" join.log || fail "join --queries --cpu-shards: the error does not say why"

if [[ -n "$mpiexec" ]]; then  # every metric and k > n are covered by mpi_search_test; here the command line
  reference l2_25 squared_l2 25
  reference l1_500 l1 500
  for ranks in 1 2 3 4; do check l2_25 squared_l2 25 "$mpiexec" -n "$ranks" -- --shard; done
  for ranks in 2 3; do check l1_500 l1 500 "$mpiexec" -n "$ranks" -- --replicate; done
  check l1_500 l1 500 "$mpiexec" -n 3 -- --cpu-shards 2
fi
echo "scale_cli_test: all outputs identical"
