#!/usr/bin/env bash
# run.sh [BUILD_DIR] [--quick] [--only model|two-gpu] [--data uint8|float32]: the scale-out measurements, from the repository root
# after a build with the benchmarks (default build-device, as scripts/device-check.sh makes it). --only runs one
# part (each fits a 10-minute command on an H100/H200); the plot is redrawn either way.
#   1. issue 17: stage costs on device 0 and the model for P = 2, 4, 8 (10M x 128 uint8, 10k queries,
#      k = 10/100/1000) -> bench/results/scale_model.{csv,md}
#   2. issue 18, when two or more GPUs are visible: 10M x 128 uint8 and float32, sharded and replicated, one
#      process with devices 0,1 and two MPI ranks with one device each -> bench/results/scale_2gpu_*.{csv,md}
#   3. bench/scale/plot.py -> bench/results/scale.png
# --quick: 1M rows and 2k queries (minutes less; not the shape). --data: one element type of step 2.
set -euo pipefail
build=build-device quick='' only='' datas='uint8 float32'
while (($#)); do
  case $1 in
    --quick) quick=--quick ;;
    --only) only=$2; shift ;;
    --data) datas=$2; shift ;;
    *) build=$1 ;;
  esac
  shift
done
bench=$build/bench/gknn_scale_bench
results=bench/results
[[ -x $bench ]] || { echo "run.sh: $bench not found (configure with -DGKNN_BUILD_BENCH=ON)" >&2; exit 1; }
shape=(--rows 10000000 --dim 128 --queries 10000 --k 10,100,1000)
[[ $quick == --quick ]] && shape=(--rows 1000000 --dim 128 --queries 2000 --k 10,100,1000)
export NCCL_NVLS_ENABLE=0  # NVLink multicast off (issue 18)
# Open MPI refuses root and more ranks than cores without these (containers run as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

if [[ $only != two-gpu ]]; then
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} "$bench" "${shape[@]}" \
    --csv $results/scale_model.csv --md $results/scale_model.md
fi

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [[ $only == model ]]; then
  :
elif ((gpus >= 2)); then
  for data in $datas; do
    dtype=()
    [[ $data == float32 ]] && dtype=(--float)
    for mode in shard replicate; do
      flags=("${dtype[@]}")
      [[ $mode == replicate ]] && flags+=(--replicate)
      "$bench" "${shape[@]}" "${flags[@]}" --devices 0,1 \
        --csv $results/scale_2gpu_${data}_${mode}_process.csv --md $results/scale_2gpu_${data}_${mode}_process.md
      if command -v mpirun >/dev/null; then
        # --bind-to none: Open MPI binds each of two ranks to one core by default, which leaves the host side of
        # every search (the root's merge above all) one core; the 2026-11-23 run without it measured 37% at k = 1000.
        mpirun --bind-to none -n 2 "$bench" "${shape[@]}" "${flags[@]}" \
          --csv $results/scale_2gpu_${data}_${mode}_mpi.csv --md $results/scale_2gpu_${data}_${mode}_mpi.md
      else
        echo "run.sh: mpirun not found: the MPI runs of issue 18 were skipped" >&2
      fi
    done
  done
else
  echo "run.sh: $gpus GPU(s) visible: the two-GPU runs of issue 18 need two (skipped)"
fi
python3 bench/scale/plot.py --results $results --png $results/scale.png || echo "run.sh: no plot (see above)" >&2
