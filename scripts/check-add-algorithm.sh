#!/usr/bin/env bash
# check-add-algorithm.sh: proves docs/architecture.md's "How to add a CUDA distance kernel / selection algorithm"
# by following the steps literally in a scratch copy of the repository: a dummy distance kernel (forwards to naive)
# and a dummy selection (forwards to the segmented sort), each one line in include/gknn/algorithms.def plus its own
# folder. It then builds, checks that registry_test passes and that `gknn info` lists both, and, when a GPU is
# visible, runs the selection and search suites on the dummies against the oracle.
#
# Usage: scripts/check-add-algorithm.sh [extra cmake arguments]   (needs nvcc; takes a CUDA build of the library)
# Exit status 0 when every step held.
set -euo pipefail

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/gknn-add-algorithm.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "check-add-algorithm: scratch copy in $work"
(cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work")
cd "$work"

# --- distance, step 1: one line in the list ----------------------------------------------------------------
sed -i '/^GKNN_DISTANCE(Cublas,/a GKNN_DISTANCE(DummyDistance, "dummy_distance", cuda, float32, "check-add-algorithm: naive under another name")' \
  include/gknn/algorithms.def
# --- distance, steps 2 and 3: the kernel's folder -----------------------------------------------------------
mkdir -p src/cuda/distance/dummy_distance
cat > src/cuda/distance/dummy_distance/dummy_distance.cu <<'CU'
#include "cuda/distance/kernels.cuh"

namespace gknn::detail::cuda {
void dummy_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  naive_distance(in, out, ctx);
}
}  // namespace gknn::detail::cuda
CU
echo 'GKNN_DISTANCE_ENTRY(DummyDistance, any_key_metric, false, false, dummy_distance, nullptr, nullptr, nullptr, nullptr, nullptr)' \
  > src/cuda/distance/dummy_distance/entries.inc

# --- selection, step 1: one line in the list ---------------------------------------------------------------
sed -i '/^GKNN_SELECT(RadixSelect,/a GKNN_SELECT(DummySelect, "dummy_select", cuda, none, "check-add-algorithm: sort under another name")' \
  include/gknn/algorithms.def
# --- selection, steps 2 and 3: the family's folder ---------------------------------------------------------
mkdir -p src/cuda/select/dummy_select
cat > src/cuda/select/dummy_select/dummy_select.cu <<'CU'
#include "cuda/select/families.cuh"

namespace gknn::detail::cuda {
void dummy_select_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  segmented_sort_run(in, k, out, ctx);
}
size_t dummy_select_workspace(int64_t rows, int64_t cols, int64_t k) { return segmented_sort_workspace(rows, cols, k); }
}  // namespace gknn::detail::cuda
CU
echo 'GKNN_SELECT_ENTRY(DummySelect, INT64_MAX, dummy_select)' > src/cuda/select/dummy_select/entries.inc

# --- build (steps 4/5) and the checks (step 6/7) -----------------------------------------------------------
jobs=$(nproc)
cmake -S . -B build -DGKNN_CUDA=ON -DGKNN_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release "$@" > build.log
cmake --build build -j"$jobs" --target gknn_cli registry_test select_suite_gpu search_suite_gpu >> build.log 2>&1 ||
  { tail -40 build.log; echo "check-add-algorithm: FAILED to build" >&2; exit 1; }
build/tests/registry_test
build/tools/gknn info > info.txt
for name in dummy_distance dummy_select; do
  grep -q " $name " info.txt || { cat info.txt; echo "check-add-algorithm: gknn info lacks $name" >&2; exit 1; }
done
set +e
build/tests/select_suite_gpu --require-gpu --gtest_filter='*dummy_select*'
status=$?
if [ $status -eq 0 ]; then
  build/tests/search_suite_gpu --require-gpu --gtest_filter='*dummy*'
  status=$?
fi
set -e
if [ $status -eq 77 ]; then
  echo "check-add-algorithm: registry and info hold; no GPU visible, the suites on the dummies were not run"
  exit 0
fi
[ $status -eq 0 ] || { echo "check-add-algorithm: a suite failed on a dummy algorithm" >&2; exit 1; }
echo "check-add-algorithm: both lists hold (registry, info, suites against the oracle)"
