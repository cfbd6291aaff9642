#!/usr/bin/env bash
# run-default.sh BUILD_DIR: the main job of `make run`. Generates (once, cached under BUILD_DIR/data) a
# SIFT-shaped data set: 100,000 base vectors and 1,000 queries of dimension 128 with integer values 0..255,
# drawn from Gaussian clusters with a fixed seed, and its exact k=100 ground truth by the float64 CPU reference.
# Then searches it with the default (auto) backend and prints backend, time, throughput and recall.
set -euo pipefail

build=${1:-build}
gknn=$build/tools/gknn
data=$build/data
name=sift-shaped-100000x128-q1000-clusters-seed42-k100
base=$data/$name.base.bvecs
queries=$data/$name.queries.bvecs
truth=$data/$name.groundtruth.ivecs

mkdir -p "$data"
if [[ ! -f $data/$name.complete ]]; then
  echo "== generating $name and its exact ground truth (float64 CPU reference; once, then cached in $data)"
  "$gknn" gen --rows 100000 --dim 128 --distribution clusters --clusters 64 --seed 42 --uint8 -o "$base" \
    --queries 1000 --queries-out "$queries" --groundtruth-out "$truth" -k 100
  touch "$data/$name.complete"
fi

echo "== gknn search: k=100, squared L2, backend auto"
output=$("$gknn" search --base "$base" --query "$queries" -k 100 --backend auto --groundtruth "$truth")
echo "$output"
# The data are integers, so every float32 distance is exact: anything but recall 1.0 is a bug.
if ! grep -q "^recall@100 (ids)      1.000000" <<<"$output"; then
  echo "make run: FAILED: the search is not exact (recall below 1.0)" >&2
  exit 1
fi
echo "== exact: recall 1.0 against the float64 oracle"
