#!/usr/bin/env bash
# racecheck_issue16.sh: one device run that tells apart the causes of issue 16 (compute-sanitizer racecheck: "The
# Sanitizer failed to handle a hardware exception", then cudaErrorIllegalAddress, in
# DeviceViews.RepeatedOneShotSearchesAllocateNothing and GpuIndex.QueryFactsGuessedBesideTheSearchStayExact, which
# the sanitize script runs with --kernel-name-exclude kns=nvjet, so cuBLAS's TF32 GEMM is never instrumented).
# Usage, from the repository root, after a build of the tests in BUILD (default build-device):
#   OUT=/some/dir scripts/diag/racecheck_issue16.sh [BUILD]
# Writes $OUT/issue16.txt (one line per job: verdict, seconds, what it varies) and $OUT/issue16-logs/*.log (tails).
# Hypotheses and the jobs that decide them:
#   H1 the uninstrumented nvjet TF32 GEMM under racecheck: S* (cuBLAS alone, gknn's call) fail with the nvjet
#      exclusion / an empty kernel filter and pass without; T1 (nvjet instrumented) passes; T3 (no tensor cores) passes.
#   H2 the NVTX initialized marks under racecheck: S*mark fail only with mark; T2 (GKNN_NO_INITIALIZED_MARK) passes.
#   H3 a lifetime or ordering defect that slow execution exposes: T4 (CUDA_LAUNCH_BLOCKING=1) changes the outcome;
#      T5 (GKNN_NO_SCAN_OVERLAP: the query scan on the caller) passes for the Index test.
# The switches (GKNN_NO_INITIALIZED_MARK, GKNN_GEMM_NO_TENSOR_CORES, GKNN_NO_SCAN_OVERLAP) keep every result exact;
# N* runs the tests under them without a sanitizer to show it.
set -u
build=${1:-build-device}
out=${OUT:?set OUT}
logs=$out/issue16-logs
mkdir -p "$logs"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
summary=$out/issue16.txt
: >"$summary"
"$nvcc" -O2 -arch=sm_90 scripts/diag/cublas_racecheck.cu -lcublas -ldl -o "$out/cublas_racecheck" \
  >"$logs/nvcc.log" 2>&1 || echo "nvcc failed: $(tail -3 "$logs/nvcc.log")" >>"$summary"
t1=("$build/tests/gpu_device_views" --gtest_filter=DeviceViews.RepeatedOneShotSearchesAllocateNothing)
t2=("$build/tests/gpu_backend" --gtest_filter=GpuIndex.QueryFactsGuessedBesideTheSearchStayExact)
base_excl=(--kernel-name-exclude kns=RadixSort --kernel-name-exclude kns=nvjet)
rc_tool=(--tool racecheck --target-processes all --print-limit 50)

job() {  # name limit env-words... -- command...
  local name=$1 limit=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  local t0=$SECONDS rc
  env GKNN_TEST_SANITIZE=1 GKNN_TEST_SANITIZE_TOOL=racecheck "${envs[@]}" timeout -k 10 "$limit" "$@" \
    >"$logs/$name.full" 2>&1
  rc=$?
  local hw=0 ill=0 verdict
  grep -q "failed to handle a hardware exception" "$logs/$name.full" && hw=1
  grep -qi "illegal" "$logs/$name.full" && ill=1
  if ((rc == 124 || rc == 137)); then verdict=TIMEOUT
  elif ((hw || ill)); then verdict=EXCEPTION
  elif ((rc == 0)); then verdict=PASS
  else verdict=FAIL; fi
  local hazards
  hazards=$(grep -oE '(RACECHECK|ERROR) SUMMARY: [0-9]+ [a-z]+' "$logs/$name.full" | tr '\n' ' ')
  printf '%-12s %-9s rc=%-3s %4ss hw_exception=%s  %s| %s\n' "$name" "$verdict" "$rc" $((SECONDS - t0)) "$hw" \
    "$hazards" "${envs[*]} $*" >>"$summary"
  { head -40 "$logs/$name.full"; echo ...; tail -60 "$logs/$name.full"; } >"$logs/$name.log"
  rm -f "$logs/$name.full"
}

# cuBLAS alone, as gemm_keys.cu calls it (gknn's options), at the two tests' shapes: fast, run first, in parallel.
cr=$out/cublas_racecheck
opts=(ldc=exact stream onebuf pedantic)
for shape in "20000 256 36" "3000 2100 36"; do
  tag=${shape%% *}
  read -r -a dims <<<"$shape"
  job "S1-$tag" 120 -- "$san" "${rc_tool[@]}" "$cr" "${dims[@]}" tf32 "${opts[@]}" &
  job "S2-$tag" 120 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "$cr" "${dims[@]}" tf32 "${opts[@]}" &
  job "S3-$tag" 120 -- "$san" "${rc_tool[@]}" --kernel-name kns=no_such_kernel "$cr" "${dims[@]}" tf32 "${opts[@]}" &
  job "S4-$tag" 120 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "$cr" "${dims[@]}" tf32 "${opts[@]}" mark &
  job "S5-$tag" 120 -- "$san" "${rc_tool[@]}" "$cr" "${dims[@]}" tf32 "${opts[@]}" mark &
  job "S6-$tag" 120 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "$cr" "${dims[@]}" fp32 "${opts[@]}" &
done
wait

# The two tests: the sanitize script's racecheck (T0), and one change each.

for t in t1 t2; do
  declare -n cmd=$t
  job "T0-$t" 300 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "${cmd[@]}" &
  job "T1-$t" 400 -- "$san" "${rc_tool[@]}" --kernel-name-exclude kns=RadixSort "${cmd[@]}" &
  job "T2-$t" 300 GKNN_NO_INITIALIZED_MARK=1 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "${cmd[@]}" &
  job "T3-$t" 300 GKNN_GEMM_NO_TENSOR_CORES=1 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "${cmd[@]}" &
  job "T4-$t" 300 CUDA_LAUNCH_BLOCKING=1 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "${cmd[@]}" &
  [[ $t == t2 ]] && job "T5-$t" 300 GKNN_NO_SCAN_OVERLAP=1 -- "$san" "${rc_tool[@]}" "${base_excl[@]}" "${cmd[@]}" &
  job "N1-$t" 120 GKNN_GEMM_NO_TENSOR_CORES=1 GKNN_NO_INITIALIZED_MARK=1 GKNN_NO_SCAN_OVERLAP=1 -- "${cmd[@]}" &
  unset -n cmd
done
wait
sort -o "$summary" "$summary"
cat "$summary"
