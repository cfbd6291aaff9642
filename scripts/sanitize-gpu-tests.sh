#!/usr/bin/env bash
# sanitize-gpu-tests.sh: every gpu-labelled CTest entry of a build under compute-sanitizer's tools, side by side,
# with sanitizer-sized inputs (GKNN_TEST_SANITIZE=1, tests/testing/sanitize.hpp). Called by
# `scripts/device-check.sh --sanitize`; usable alone on a built tree:
#   scripts/sanitize-gpu-tests.sh --build build-device --out device-out [--tools memcheck,racecheck] [--jobs 16]
#
# Why a pool of shards: compute-sanitizer serialises a process's kernels and slows each down 10-100x, so one
# process per test binary and tool, one after the other, takes far longer than the machine needs. Each GoogleTest
# binary is cut into GTEST_TOTAL_SHARDS shards (more for the binaries that cost more in the normal run, the COST
# of tests/CMakeLists.txt), and the (tool, shard) jobs run --jobs at a time, the most expensive first, with the
# tools interleaved. Entries that are not GoogleTest binaries (mpiexec, pytest) run as one job each, with
# --target-processes all so that their children are checked too.
#
# Verdict per job: the test's exit code (0; 77 = skipped counts as not clean: a GPU test must run here) and the
# tool's count: the sum of every "ERROR SUMMARY: N errors" line (one per checked process), and for racecheck the
# sum of "RACECHECK SUMMARY: N hazards" (errors and warnings alike). No summary line at all => "?" (not clean); a
# test's line sums what its shards found and adds "+?" when a shard's count is unknown (errors are never hidden).
# Output in --out: sanitize-<tool>.txt (one line per test: rc, errors, seconds summed over shards, slowest shard),
# sanitize-cases.txt (the slowest GoogleTest cases of every job, and the case a timed-out job was in),
# sanitize-summary.txt (one line per tool and the wall time), sanitize-failures.txt (the sanitizer's reports and
# GoogleTest's failure lines of every job that failed, bounded: failure_excerpt), logs in sanitize-logs/.
set -uo pipefail

build="" out="" tools="memcheck,racecheck,synccheck,initcheck" timeout_s=400 jobs=16 max_shards=12 filter="" deadline=0
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --tools) tools=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;  # per job (one shard under one tool)
    --jobs) jobs=$2; shift ;;
    --max-shards) max_shards=$2; shift ;;
    --filter) filter=$2; shift ;;      # only CTest entries whose name matches (Python re.search)
    --deadline) deadline=$2; shift ;;  # seconds for the whole run (0: none): later jobs get less time or none
    *) echo "sanitize-gpu-tests: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ -n $build && -n $out ]] || { echo "sanitize-gpu-tests: --build DIR --out DIR are required" >&2; exit 2; }
if [[ ! -x $sanitizer ]]; then
  echo "sanitize     FAILED: compute-sanitizer not found (PATH, /usr/local/cuda/bin)" | tee "$out/sanitize-summary.txt"
  exit 1
fi
logs=$out/sanitize-logs
rm -rf "$logs"
kernel_filter=0  # whether this compute-sanitizer filters the kernels it checks by name (run_job)
kernel_exclude=0
help_text=$("$sanitizer" --help 2>/dev/null)  # read whole: grep -q closing a pipe early fails it under pipefail
[[ $help_text == *"--kernel-name "* ]] && kernel_filter=1
[[ $help_text == *"--kernel-name-exclude"* ]] && kernel_exclude=1
mkdir -p "$logs/failures"

# One job per line: cost<TAB>tool<TAB>name<TAB>shard<TAB>shards<TAB>leak check (1/0)<TAB>workdir<TAB>shell-quoted
# env and command. Shards per tool: SECONDS_BY_TOOL / SHARD_SECONDS (below), at most --max-shards and the binary's
# number of test cases (an empty shard only pays the tool's start-up). Leak check: not for pytest, whose torch keeps
# its cached device blocks until exit by design; the C++ binaries free gknn's cached pipelines before they return.
job_list() {
  (cd "$build" && "${CTEST:-ctest}" -L '^gpu$' --show-only=json-v1) | python3 -c '
import json, os, re, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
tools, max_shards, pattern, default_wd = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3], sys.argv[4]
tests = []
for t in json.load(sys.stdin).get("tests", []):
    if pattern and not re.search(pattern, t["name"]):
        continue
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    tests.append((t, props))

def case_count(entry):  # test cases of a GoogleTest entry (its filter applied); None when not GoogleTest
    t, props = entry
    if "--require-gpu" not in t["command"]:  # gknn_test/gknn_test_part entries; mpiexec and pytest are not
        return None
    env = dict(os.environ, **dict(e.split("=", 1) for e in props.get("ENVIRONMENT", [])), GKNN_TEST_SANITIZE="1")
    try:
        out = subprocess.run(t["command"] + ["--gtest_list_tests"], cwd=props.get("WORKING_DIRECTORY", default_wd),
                             env=env, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return max(1, sum(1 for line in out.splitlines() if line.startswith("  ")))

with ThreadPoolExecutor(16) as pool:
    counts = list(pool.map(case_count, tests))
# Job-seconds per entry and tool (memcheck, racecheck, synccheck, initcheck), summed over the shards of the entry: run 18
# times 1.1 (H100, 2026-11-27, tree 2702002, 16 jobs at a time: bench/results/raw/sanitize_run18_jobs_2026-11-27.txt;
# every job started, 5916 job-seconds in 440 s). gpu_upload is a guess: its four jobs started last (20 s each was
# predicted) and were cut by the deadline at 103-112 s, before its sanitized cuts (tests/gpu_upload_test.cpp).
# A shard is a process that loads and instruments its kernels again: 4-9 s for a shard of one small case, about 25 s
# per fused-kernel instantiation under racecheck. A 0 keeps the earlier figure of the entry (the script leaves that
# (entry, tool) out); an entry not listed is guessed from its COST times 4 under every tool.
SECONDS_BY_TOOL = {  # memcheck, racecheck, synccheck, initcheck
    "gpu_large_k": (57, 132, 38, 82), "gpu_device_views": (23, 306, 20, 114),
    "search_suite_gpu": (58, 237, 22, 32), "adversarial_gpu": (233, 190, 161, 246),
    "join_gpu_test": (40, 271, 40, 58), "select_suite_gpu": (61, 249, 29, 48), "gpu_fused": (23, 391, 20, 24),
    "gpu_backend": (98, 211, 98, 150), "gpu_large_k_many_rows": (41, 86, 31, 42), "gpu_tang": (210, 15, 11, 13),
    "gpu_select_small": (19, 264, 19, 20), "select_suite_gpu_tang_merge": (131, 26, 19, 21),
    "select_suite_gpu_large_k": (41, 104, 38, 28), "gpu_sharded_index_test": (128, 174, 86, 164),
    "gpu_mpi_search_np4": (28, 53, 36, 28), "gpu_output": (12, 38, 11, 13), "gpu_streaming": (14, 63, 15, 18),
    "gpu_mpi_search_np1": (12, 18, 13, 10), "python_gpu_test": (16, 0, 16, 0),
    "gpu_streaming_l1": (11, 30, 13, 13), "gpu_streaming_inner_product": (12, 30, 14, 13),
    "select_suite_gpu_tang_insertion": (16, 8, 6, 7), "select_suite_gpu_tang_heap": (19, 14, 12, 12),
    "select_suite_gpu_tang_insertion_buffered": (9, 6, 4, 4), "gpu_bitonic": (2, 4, 3, 3),
    "gpu_upload": (90, 90, 70, 90), "gpu_plan_test": (2, 4, 2, 2), "guard_gpu": (18, 50, 16, 16),
}
TOOL_INDEX = {"memcheck": 0, "racecheck": 1, "synccheck": 2, "initcheck": 3}
# Seconds a shard should take: an entry gets ceil(seconds / this) shards of that tool (at most --max-shards and its
# number of cases). Every shard is one more process whose kernels the tool loads and instruments again (racecheck:
# 20-30 s for a process of small cases, 2026-11-27), so shards are as long as the deadline allows: a job of up to
# ~200 s started first still ends inside 470 s, and the entries above 130 s of racecheck get two shards.
SHARD_SECONDS = {"memcheck": 150, "racecheck": 130, "synccheck": 150, "initcheck": 150}
# Shard counts set by the case that dominates an entry (GTest deals case i to shard i % N): gpu_fused under racecheck
# keeps EqualsTheOracleExactly apart from the other seven cases in 3 shards (more would instrument the fused kernel
# again per shard); gpu_device_views in 4 under racecheck puts IntegerData..., FloatData..., the guard retries and
# DeviceSelect.IdenticalToTheCpuSelection in four shards, in 3 under initcheck FloatData and IdenticalTo... together;
# gpu_tang under memcheck keeps KAtBucketEdges and RowsNotMultipleOfGroupPowers (103 and 88 s, run 11) apart.
# join_gpu_test, the search suite and select_suite_gpu take racecheck in one process (116-146 s predicted after the
# cuts of 2026-11-27: a second shard would instrument the same kernels again, 20-30 s).
SHARDS = {("gpu_fused", "racecheck"): 3, ("gpu_device_views", "racecheck"): 4, ("gpu_device_views", "initcheck"): 3,
          ("gpu_tang", "memcheck"): 3, ("join_gpu_test", "racecheck"): 1, ("search_suite_gpu", "racecheck"): 1,
          ("select_suite_gpu", "racecheck"): 1}
# Seconds of the longest shard of an entry under a tool where one case outweighs the rest, so those shards start
# first: racecheck instruments each instantiation of the fused kernel (and of the selectors a device-view test walks
# through) once per process, about 25 s each (the shard of GpuFused.EqualsTheOracleExactly: 244 s in run 17 with 7
# racecheck cases, now 5); KAtBucketEdges of gpu_tang under memcheck (95 s in run 17, about 83 with the 512 bucket
# full for one flag set; RowsNotMultipleOfGroupPowers 87 s, about 50 with half its k = 1024 selections).
LONGEST_SHARD = {("gpu_fused", "racecheck"): 190, ("gpu_device_views", "racecheck"): 165,
                 ("gpu_tang", "memcheck"): 83, ("select_suite_gpu_tang_merge", "memcheck"): 85,
                 ("gpu_device_views", "initcheck"): 127, ("gpu_backend", "initcheck"): 85}
# (entry, tool) pairs left out because another entry checks the same kernels with the same protocol under that tool
# (docs/reliability.md): under racecheck the streamed other metrics (one case each already: Auto at k = 2500; the L1
# and similarity kernels are the those of the search suite and adversarial_gpu, the large-k selection that of gpu_large_k), the
# sample/radix selections of the select suite (gpu_large_k and its many-row part run both selectors in every variant:
# long, skewed, short and single rows, labels, the missed bracket); under racecheck and synccheck the MPI test on
# 4 ranks (its kernels are those of the 1-rank entry; the uneven rank paths are host code, which memcheck and initcheck
# still see on 4 ranks).
SAME_UNDER_TOOL = {("gpu_streaming_l1", "racecheck"), ("gpu_streaming_inner_product", "racecheck"),
                   ("select_suite_gpu_large_k", "racecheck"), ("gpu_mpi_search_np4", "racecheck"),
                   ("gpu_mpi_search_np4", "synccheck")}
# Entries that run another entry of the same binary over the same kernels: the MPI test on 2 and 3 ranks (1 and 4
# ranks keep the one-rank and the uneven many-rank paths; every rank is a process the tools instrument again, and
# the four entries took 600 job-seconds in run 14, 2026-11-25).
SAME_AS_ANOTHER = {"gpu_mpi_search_np2", "gpu_mpi_search_np3"}
# pytest (leak == 0) runs under memcheck and synccheck only: under racecheck and initcheck it took more than 300 s
# even with only gknn kernels checked (2026-11-24: the tools track every allocation and launch of torch and cupy),
# and the kernels it reaches are those of gpu_device_views, which every tool checks.
jobs = []
for (t, props), count in zip(tests, counts):
    if t["name"] in SAME_AS_ANOTHER and not pattern:
        continue
    gtest = count is not None
    leak = 0 if os.path.basename(t["command"][0]).startswith("python") else 1
    env = list(props.get("ENVIRONMENT", []))
    guess = 4 * float(props.get("COST", 1) or 1)
    for tool in tools:
        if leak == 0 and tool in ("racecheck", "initcheck"):
            continue
        if (t["name"], tool) in SAME_UNDER_TOOL and not pattern:
            continue
        row = SECONDS_BY_TOOL.get(t["name"])
        cost = row[TOOL_INDEX[tool]] if row and tool in TOOL_INDEX else guess
        per = SHARD_SECONDS.get(tool, 100)
        shards = max(1, min(max_shards, count, SHARDS.get((t["name"], tool), -int(-cost // per)))) if gtest else 1
        for i in range(shards):
            shard_env = env + (["GTEST_TOTAL_SHARDS=%d" % shards, "GTEST_SHARD_INDEX=%d" % i] if gtest else [])
            cmd = shlex.join(shard_env + ["--"] + t["command"])
            start_key = max(cost / shards, LONGEST_SHARD.get((t["name"], tool), 0))
            jobs.append((start_key, tool, t["name"], i, shards, leak, props.get("WORKING_DIRECTORY", "-"), cmd))
# Longest first; ties keep the tools interleaved (their order within an entry).
jobs.sort(key=lambda j: -j[0])
for j in jobs:
    print("%.1f\t%s\t%s\t%d\t%d\t%d\t%s\t%s" % j)
' "$tools" "$max_shards" "$filter" "$build/tests"
}

count_errors() {  # tool log -> the tool's count, or "?" without a summary line
  local tool=$1 log=$2 pattern='ERROR SUMMARY: [0-9]+'
  [[ $tool == racecheck ]] && grep -qE 'RACECHECK SUMMARY: [0-9]+' "$log" && pattern='RACECHECK SUMMARY: [0-9]+'
  grep -oE "$pattern" "$log" | awk '{ n += $NF; seen = 1 } END { print seen ? n : "?" }'
}

run_job() {  # tool name shard shards leak-check workdir quoted-command seconds
  local tool=$1 name=$2 shard=$3 shards=$4 leak=$5 wd=$6 quoted=$7 limit=$8
  local log="$logs/$tool-$name-$shard.log" t0=$SECONDS extra=() rc
  [[ $wd != - ]] || wd=$build/tests  # CTest's default: the test's binary directory
  [[ $tool == memcheck && $leak == 1 ]] && extra=(--leak-check full)
  # pytest (leak check off): only gknn's kernels are checked; torch's and cupy's own kernels, which the tests use to
  # make and compare tensors, took racecheck and initcheck past 300 s (2026-11-24), and are not this project's.
  [[ $leak == 0 && $kernel_filter == 1 ]] && extra+=(--kernel-name kns=gknn)
  # racecheck: not CUB's radix sorts (their shared-memory protocol is CUB's; they took racecheck 50-140 s per
  # select/search combination that sorts, 2026-11-24); memcheck and the other tools check them. "RadixSort" is in
  # the name of every CUB radix-sort kernel (DeviceRadixSort*, DeviceSegmentedRadixSortKernel), mangled or not, and
  # of none of gknn's (lower-case names). kns=cub did not take (run 5): the name matched may be the kernel's own.
  # cuBLAS's sm90 GEMMs ("nvjet_sm90_*") are checked: leaving them out too (a second --kernel-name-exclude, of any
  # name) made racecheck stop with "Internal Sanitizer Error: failed to handle a hardware exception" in tests whose
  # search runs cuBLAS (H100, 2026-11-27, scripts/diag/racecheck_issue16.sh); with RadixSort alone left out,
  # gpu_device_views and gpu_backend pass whole with 0 hazards, nvjet kernels included.
  [[ $tool == racecheck && $kernel_exclude == 1 ]] && extra+=(--kernel-name-exclude kns=RadixSort)
  local words
  eval "words=($quoted)"  # env assignments, --, the CTest command
  local envs=() i
  for ((i = 0; i < ${#words[@]}; ++i)); do [[ ${words[i]} == -- ]] && break; envs+=("${words[i]}"); done
  local cmd=("${words[@]:i+1}")
  # GKNN_TEST_SANITIZE_TOOL: the tests' racecheck_mode() (tests/testing/sanitize.hpp)
  (cd "$wd" && env GKNN_TEST_SANITIZE=1 GKNN_TEST_SANITIZE_TOOL="$tool" "${envs[@]}" timeout -k 10 "$limit" \
     "$sanitizer" --tool "$tool" "${extra[@]}" --target-processes all --print-limit 50 "${cmd[@]}") </dev/null >"$log" 2>&1
  rc=$?
  local errors
  errors=$(count_errors "$tool" "$log")
  echo "$tool $name $shard/$shards rc=$rc errors=$errors seconds=$((SECONDS - t0))" >>"$out/sanitize-jobs.txt"
  [[ $rc == 0 && $errors == 0 ]] || failure_excerpt "$tool $name $shard/$shards rc=$rc errors=$errors" "$log" \
    >"$logs/failures/$tool-$name-$shard.txt"
}

# A failed job's log, the parts that say why, bounded (the device tool brings back a few files, not the logs):
# the sanitizer's reports (its "=========" lines: error blocks, hazards, API errors; at most 96, then its summaries)
# and GoogleTest's failures (each "Failure" with the lines up to the next GoogleTest marker, "[  FAILED  ]", C++
# exceptions, and the case a timed-out job was in; at most 60 lines). Collected into sanitize-failures.txt.
failure_excerpt() {  # header log
  echo "#### $1 (log: sanitize-logs/$(basename "$2"))"
  echo "-- sanitizer reports:"
  grep -E '^========= ' "$2" | grep -vE '^========= (COMPUTE-SANITIZER|[A-Z]+ SUMMARY|LEAK SUMMARY: 0 bytes)' |
    head -n 96
  grep -E '^========= [A-Z]+ SUMMARY' "$2" | head -n 4
  echo "-- GoogleTest failures:"
  awk '/^\[ RUN +\]/ { run = $0; open = 1; shown = 0; block = 0; next }
       /^\[ +OK +\]/ { open = 0; block = 0; next }
       /: Failure$|C\+\+ exception|uncaught exception|^terminate called|Segmentation fault|Aborted/ {
         if (!shown && run != "") print run; shown = 1; block = 14 }
       /^\[  FAILED  \]/ { print; open = 0; block = 0; next }
       /^\[/ { block = 0 }
       block > 0 { print; --block }
       END { if (open) print "unfinished (timed out or crashed): " run }' "$2" | head -n 60
  echo
}

: >"$out/sanitize-jobs.txt"
t_start=$SECONDS
mapfile -t lines < <(job_list)
running=0
for line in "${lines[@]}"; do
  IFS=$'\t' read -r _ tool name shard shards leak wd quoted <<<"$line"
  if ((running >= jobs)); then wait -n; ((--running)); fi
  limit=$timeout_s
  if ((deadline > 0)); then  # a job that cannot get 20 s is not started, and is reported as such (rc=notrun)
    left=$((deadline - (SECONDS - t_start)))
    ((left < limit)) && limit=$left
    if ((limit < 20)); then
      echo "$tool $name $shard/$shards rc=notrun errors=? seconds=0" >>"$out/sanitize-jobs.txt"
      continue
    fi
  fi
  run_job "$tool" "$name" "$shard" "$shards" "$leak" "$wd" "$quoted" "$limit" &
  ((++running))
done
wait
wall=$((SECONDS - t_start))
# Every failed job's excerpt (failure_excerpt), most expensive job first (the order they were started in).
: >"$out/sanitize-failures.txt"
for line in "${lines[@]}"; do
  IFS=$'\t' read -r _ tool name shard _ <<<"$line"
  f="$logs/failures/$tool-$name-$shard.txt"
  [[ -f $f ]] && cat "$f" >>"$out/sanitize-failures.txt"
done

# Per tool and test: the distinct non-zero exit codes of its shards (details in sanitize-jobs.txt), summed errors,
# seconds summed over shards and the slowest shard.
IFS=, read -r -a tool_list <<<"$tools"
summary=()
for tool in "${tool_list[@]}"; do
  f="$out/sanitize-$tool.txt"
  awk -v tool="$tool" '$1 == tool {
      split($4, r, "="); split($5, e, "="); split($6, s, "=")
      name = $2; seen[name] = 1
      if (r[2] != 0 && !((name, r[2]) in rcs)) {
        rcs[name, r[2]] = 1; bad_rc[name] = bad_rc[name] sep[name] r[2]; sep[name] = ","
      }
      if (e[2] ~ /^[0-9]+$/) err[name] += e[2]; else unknown[name] = 1
      sec[name] += s[2]; if (s[2] > slowest[name]) slowest[name] = s[2]
    } END {
      for (n in seen) printf "%s rc=%s errors=%s seconds=%d slowest_shard=%d\n", n, (n in bad_rc) ? bad_rc[n] : "0",
        (n in unknown) ? err[n] + 0 "+?" : err[n] + 0, sec[n], slowest[n]
    }' "$out/sanitize-jobs.txt" | sort >"$f"
  binaries=$(wc -l <"$f")
  # A test with a shard of unknown count ("N+?": timed out, not run) still adds the errors its other shards found.
  errors=$(awk '{ split($3, e, "="); n += e[2] + 0 } END { print n + 0 }' "$f")
  bad=$(awk '{ split($2, r, "="); split($3, e, "=")
               if (r[2] != "0" || e[2] != "0") printf "%s(%s %s) ", $1, $2, $3 }' "$f")
  seconds=$(awk '{ split($4, s, "="); n += s[2] } END { print n + 0 }' "$f")
  summary+=("sanitize     $tool: $errors errors over $binaries tests ($seconds s of jobs)${bad:+; NOT CLEAN: $bad}")
done
side="sanitize     all tools side by side: $wall s wall, ${#lines[@]} jobs, $jobs at a time"
summary+=("$side (GKNN_TEST_SANITIZE=1)")
filters="pytest: gknn's kernels only"
((kernel_filter)) || filters="pytest: every kernel (no --kernel-name in this compute-sanitizer)"
if ((kernel_exclude)); then filters+="; racecheck: not CUB's radix sorts"
else filters+="; racecheck: every kernel (no --kernel-name-exclude in this compute-sanitizer)"; fi
summary+=("sanitize     kernel filters: $filters")
failed_jobs=$(grep -c '^#### ' "$out/sanitize-failures.txt")
((failed_jobs == 0)) ||
  summary+=("sanitize     failures: $failed_jobs jobs; their reports and failed cases in sanitize-failures.txt")
printf '%s\n' "${summary[@]}" >"$out/sanitize-summary.txt"

# The slowest GoogleTest cases (what to shrink next) and where each timed-out job was.
{
  shopt -s nullglob  # no logs at all when nothing started
  for log in "$logs"/*.log; do
    job=$(basename "$log" .log)
    sed -nE "s/^\[ +(OK|FAILED) +\] ([^ ]+) \(([0-9]+) ms\).*/\3 $job \2 \1/p" "$log"
    grep -q '^\[ RUN' "$log" && ! grep -q '^\[==========\] .* ran' "$log" &&
      echo "999999999 $job $(grep -E '^\[ RUN +\]' "$log" | tail -n1 | sed -E 's/^\[ RUN +\] //') UNFINISHED"
  done
} | sort -rn | head -n 120 >"$out/sanitize-cases.txt"

cat "$out/sanitize-summary.txt"
grep -q 'NOT CLEAN' "$out/sanitize-summary.txt" && exit 1
[[ ${#lines[@]} -gt 0 ]] || exit 1
exit 0
