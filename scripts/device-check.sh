#!/usr/bin/env bash
# device-check.sh: build, test and benchmark gknn on a GPU machine, in one command; the summary is printed last.
#
# Runs in the repository root (e.g. the copy the device tool sends). Steps, each skippable:
#   0. when nanoflann.hpp is not installed, unpack .device-deps/*.deb (scripts/fetch-device-deps.sh; the device
#      tool's carry must name .device-deps) with dpkg -x into build-device-deps/ and pass it in CMAKE_PREFIX_PATH;
#   1. configure Release with CUDA for sm_90 into build-device (Ninja when available) and build (-j16);
#   2. ctest -L gpu (serially: GPU tests size their tiles from free device memory), then ctest -L cpu;
#   3. every GPU benchmark: build-device/bench/gknn_gpu_bench (the seeds' pairs, with --configs/--filter), every
#      other build-device/bench/gknn_*_bench but the CPU one (run with its defaults, OUT exported), then
#      bench/gpu/torch_peer.py on the same shapes as gknn_gpu_bench.
# Full logs and the benchmark tables go to $OUT (default ./device-out); the last lines on stdout are a short
# summary: test counts per label and the fastest pair of each benchmark configuration next to torch.
#
# Tests and benchmarks are switched on explicitly at every configure: a build dir configured earlier with
# GKNN_BUILD_TESTS=OFF would otherwise keep OFF in its cache and ctest would run stale test binaries.
#
# Device time is scarce and one command may run 10 minutes: split a session into calls, since build-device is
# kept between calls on the same machine:  --build-only, then --tests-only, then --bench-only.
#
# --readme instead runs the README's two commands as a newcomer does: in a clean copy of the repository (`git archive`
# of HEAD, or of the tracked files where there is no .git: a plain copy without build*/ and device-out/), with the
# set-up step (scripts/install-deps.sh) as it comes, `make run JOBS=N`, then `make test JOBS=N`; the summary gives
# both exit codes and the tails of their output. --readme-run and --readme-test do one command each (the second
# reuses the copy and build of the first, so a session can split them into two calls).
# --sanitize runs every GPU test under compute-sanitizer's four tools with sanitizer-sized inputs
# (scripts/sanitize-gpu-tests.sh).
set -uo pipefail

usage() {
  cat <<'EOF'
usage: scripts/device-check.sh [options]
  --build-only        configure and build, nothing else
  --tests-only        build (incremental) + tests, no benchmarks
  --bench-only        build (incremental) + benchmarks, no tests
  --no-build          use build-device as it is
  --no-cpu            skip the cpu-labelled tests
  --filter REGEX      only tests whose name matches (ctest -R)
  --bench-filter RE   only benchmark pairs 'distance/selection' matching RE
  --configs LIST      benchmark configurations (default garcia,sift10k,sift1m)
  --quick             benchmarks on garcia,sift10k only, 3 repeats
  --no-torch          skip the torch peer
  --jobs N            build parallelism (default 16)
  --targets LIST      build only these CMake targets (space-separated; a focused call: the library, one test, one
                      benchmark); a later full build on the machine reuses their objects
  --gpu-jobs N        gpu tests run N at a time (default 1; tests on small data fit side by side)
  --readme            the README's `make run` and `make test` in a clean copy (nothing else; see the header)
  --readme-run        only `make run` in a fresh clean copy
  --readme-test       only `make test`, in the copy of --readme-run when there is one
  --readme-dir DIR    where the clean copy goes (default /tmp/gknn-readme; replaced by --readme, --readme-run)
  --sanitize          build (incremental) + every gpu-labelled test under compute-sanitizer memcheck
                      (--leak-check full), racecheck, synccheck and initcheck with GKNN_TEST_SANITIZE=1
                      (sanitizer-sized inputs), the four tools side by side (scripts/sanitize-gpu-tests.sh);
                      one summary line per tool; --filter applies
  --sanitize-tools L  tools of --sanitize (default memcheck,racecheck,synccheck,initcheck)
  --sanitize-timeout S  limit per job (one shard of a test under one tool) in seconds (default 400)
  --sanitize-jobs N   jobs at a time (default 16)
  --sanitize-deadline S  seconds for the whole sanitizer run (default 0: none); jobs that would start later than
                      20 s before it are reported as not run
EOF
}

root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/device-out}
build=$root/build-device
do_build=1 do_tests=1 do_bench=1 do_cpu=1 do_torch=1 do_sanitize=0
sanitize_tools="memcheck,racecheck,synccheck,initcheck" sanitize_timeout=400 sanitize_jobs=16 sanitize_deadline=0
filter="" bench_filter="" configs="garcia,sift10k,sift1m" repeats=5 jobs=16 gpu_jobs=1
readme_steps="" readme_dir=/tmp/gknn-readme targets=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-only) do_tests=0 do_bench=0 ;;
    --tests-only) do_bench=0 ;;
    --bench-only) do_tests=0 ;;
    --no-build) do_build=0 ;;
    --no-cpu) do_cpu=0 ;;
    --filter) filter=$2; shift ;;
    --bench-filter) bench_filter=$2; shift ;;
    --configs) configs=$2; shift ;;
    --quick) configs="garcia,sift10k" repeats=3 ;;
    --no-torch) do_torch=0 ;;
    --jobs) jobs=$2; shift ;;
    --gpu-jobs) gpu_jobs=$2; shift ;;
    --targets) read -ra targets <<<"$2"; shift ;;
    --readme) readme_steps="run test" ;;
    --readme-run) readme_steps="run" ;;
    --readme-test) readme_steps="test" ;;
    --readme-dir) readme_dir=$2; shift ;;
    --sanitize) do_sanitize=1 do_tests=0 do_bench=0 ;;
    --sanitize-tools) sanitize_tools=$2; shift ;;
    --sanitize-timeout) sanitize_timeout=$2; shift ;;
    --sanitize-jobs) sanitize_jobs=$2; shift ;;
    --sanitize-deadline) sanitize_deadline=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "device-check: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
summary=()
note() { summary+=("$1"); }
status=0

# ---- 0. packages the image lacks, carried in .device-deps/ ----------------------------------------------------
# The device image has no libnanoflann-dev (header-only: the join's CPU kd-tree) and no network. A session downloads
# the .deb elsewhere (scripts/fetch-device-deps.sh) and the device tool carries .device-deps/ (carry
# [".device-deps"]). When the header is not installed, every .deb there is unpacked with `dpkg -x` into
# build-device-deps/ (inside the build area, never into /) and CMake searches its usr/ through CMAKE_PREFIX_PATH.
deps_prefix=$root/build-device-deps
deps_args=()
unpack_deb() {  # deb dir: dpkg -x, else ar + tar (the data member's compression is tar's to detect)
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
  else
    local tmp member
    tmp=$(mktemp -d) || return 1
    member=$(cd "$tmp" && ar t "$1" | grep -m1 '^data\.tar') && (cd "$tmp" && ar x "$1" "$member") &&
      tar -xf "$tmp/$member" -C "$2"
    local rc=$?
    rm -rf "$tmp"
    return $rc
  fi
}
device_deps() {
  if [[ -f /usr/include/nanoflann.hpp || -f /usr/local/include/nanoflann.hpp ]]; then
    note "nanoflann    installed on this machine (the join's CPU kd-tree)"
    return
  fi
  local debs=() deb
  for deb in "$root"/.device-deps/*.deb; do [[ -f $deb ]] && debs+=("$deb"); done
  if ((${#debs[@]} == 0)) && [[ -f $deps_prefix/usr/include/nanoflann.hpp ]]; then
    deps_args=(-DCMAKE_PREFIX_PATH="$deps_prefix/usr")
    note "nanoflann    from build-device-deps/ (unpacked by an earlier call on this machine)"
    return
  fi
  if ((${#debs[@]} == 0)); then
    note "nanoflann    MISSING: not installed and no .device-deps/*.deb (scripts/fetch-device-deps.sh, then carry"
    note "             [\".device-deps\"]): the join's cpu/hybrid/round_robin modes will be Unsupported in this build"
    return
  fi
  mkdir -p "$deps_prefix"
  for deb in "${debs[@]}"; do
    if ! unpack_deb "$deb" "$deps_prefix"; then
      note "nanoflann    could not unpack $(basename "$deb") (dpkg -x / ar)"
      return
    fi
  done
  if [[ -f $deps_prefix/usr/include/nanoflann.hpp ]]; then
    deps_args=(-DCMAKE_PREFIX_PATH="$deps_prefix/usr")
    note "nanoflann    from .device-deps/ ($(cd "$root/.device-deps" && echo *.deb)), unpacked into build-device-deps/"
  else
    note "nanoflann    MISSING: the .debs of .device-deps/ hold no usr/include/nanoflann.hpp"
  fi
}

# ---- --readme: the README's two commands in a clean copy ---------------------------------------------------
clean_copy() {  # into $readme_dir, replacing it
  rm -rf "$readme_dir"
  mkdir -p "$readme_dir"
  # The working tree as it is, without build outputs: on the device machine .git (when present) may be a stale
  # snapshot that does not hold the tree's commit, so `git archive HEAD` would test old code.
  tar -C "$root" --exclude='./build*' --exclude='./device-out' --exclude='./.git' -cf - . | tar -x -C "$readme_dir"
  note "copy         plain copy of $root without .git, build*/ and device-out/ -> $readme_dir"
}

readme_step() {  # run|test: `make <step>` in the copy, as the README says
  local step=$1 log="$out/readme-$step.log" t0=$SECONDS rc
  (cd "$readme_dir" && env -u GKNN_SKIP_DEPS make "$step" JOBS="$jobs" "${readme_make_args[@]}") >"$log" 2>&1
  rc=$?
  note "make $(printf "%-9s" "$step")exit $rc ($((SECONDS - t0)) s; log: readme-$step.log); its last lines:"
  [[ $rc != 0 ]] && status=1
  while IFS= read -r l; do summary+=("  | $l"); done < <(grep -m 8 '^install-deps:' "$log")  # the set-up step's verdict
  local tail_lines=50  # make run: both jobs, every timing line
  [[ $step == test ]] && tail_lines=12
  while IFS= read -r l; do summary+=("  | $l"); done < <(tail -n "$tail_lines" "$log")
  if [[ $step == test ]]; then
    while IFS= read -r l; do summary+=("  | $l"); done < <(grep -E '\(Failed|\(Timeout|\(SEGFAULT|\(Subprocess|\*\*\*Skipped' "$log" | head -n 20)
  fi
}

if [[ -n $readme_steps ]]; then
  # A package carried in .device-deps/ is handed over the way the README tells a user with libraries from
  # elsewhere: CMAKE_ARGS=-DCMAKE_PREFIX_PATH=... (install-deps.sh probes with the same arguments).
  readme_make_args=()
  device_deps
  ((${#deps_args[@]} > 0)) && readme_make_args=(CMAKE_ARGS="${deps_args[*]}") &&
    note "readme       make ... ${readme_make_args[*]}"
  [[ $readme_steps == test && -d $readme_dir ]] || clean_copy
  for step in $readme_steps; do readme_step "$step"; done
  do_build=0 do_tests=0 do_bench=0
fi

# ---- 1. build ---------------------------------------------------------------------------------------------
if [[ $do_build == 1 ]]; then
  device_deps
  generator=()
  command -v ninja >/dev/null && [[ ! -f $build/Makefile ]] && generator=(-G Ninja)
  t0=$SECONDS
  # Sources whose content changed since the last build, touched: a copied file may carry a time older than its
  # object (scripts/touch-changed-sources.sh says how), and make/ninja would skip it.
  touched=$("$root/scripts/touch-changed-sources.sh" "$root" "$build")
  if cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGKNN_CUDA=ON -DGKNN_BUILD_TESTS=ON -DGKNN_BUILD_BENCH=ON \
       -DCMAKE_CUDA_ARCHITECTURES=90 "${deps_args[@]}" >"$out/configure.log" 2>&1 &&
     cmake --build "$build" -j "$jobs" ${targets[@]+--target "${targets[@]}"} >"$out/build.log" 2>&1; then
    # After a focused build the other targets' objects may be stale: the sources' state is saved by full builds only.
    ((${#targets[@]})) || "$root/scripts/touch-changed-sources.sh" "$root" "$build" --save
    note "build        OK ($((SECONDS - t0)) s; $touched changed sources touched first; logs: configure.log, build.log)"
    grep -q '^GKNN_NANOFLANN_INCLUDE:PATH=.*NOTFOUND' "$build/CMakeCache.txt" 2>/dev/null &&
      note "build        WITHOUT the join's CPU kd-tree: nanoflann.hpp not found (configure.log)"
  else
    note "build        FAILED ($((SECONDS - t0)) s) — see build.log; last lines:"
    tail -n 25 "$out/build.log" "$out/configure.log" 2>/dev/null
    summary+=("$(grep -m3 -E 'error|Error' "$out/build.log" "$out/configure.log" 2>/dev/null)")
    do_tests=0 do_bench=0 status=1
  fi
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1 &&
  note "device       $(head -n1 "$out/gpu.txt")"
# The host as gknn sees it (cores, a container's CPU quota, the threads it uses): host-side timings depend on it.
[[ -x $build/tools/gknn ]] && note "host         $("$build/tools/gknn" info 2>/dev/null | sed -n 's/^cpu  *//p')"

# ---- 2. tests ---------------------------------------------------------------------------------------------
run_ctest() {  # label, parallelism
  local label=$1 par=$2
  local log="$out/ctest-$label.log"
  local args=(-L "^$label\$" --output-on-failure -j "$par")
  [[ -n $filter ]] && args+=(-R "$filter")
  local t0=$SECONDS
  (cd "$build" && ctest "${args[@]}") >"$log" 2>&1
  local rc=$?
  local line skipped
  line=$(grep -E 'tests passed|No tests were found' "$log" | tail -n1)
  skipped=$(grep -c -E '\*\*\*Skipped|Not Run' "$log")
  note "tests $label    ${line:-no ctest summary (rc $rc)}; skipped: $skipped ($((SECONDS - t0)) s; log: ctest-$label.log)"
  if [[ $rc != 0 ]]; then
    status=1
    summary+=("$(grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess)' "$log" | head -n 20)")
  fi
}
if [[ $do_tests == 1 ]]; then
  run_ctest gpu "$gpu_jobs"
  [[ $do_cpu == 1 ]] && run_ctest cpu "$jobs"
fi

# ---- 2b. compute-sanitizer over the GPU tests (--sanitize) ----------------------------------------------
# scripts/sanitize-gpu-tests.sh: every gpu-labelled entry, GoogleTest binaries cut into shards, the (tool, shard)
# jobs run --sanitize-jobs at a time; its one line per tool joins the summary.
if [[ $do_sanitize == 1 ]]; then
  sanitize_args=(--build "$build" --out "$out" --tools "$sanitize_tools" --timeout "$sanitize_timeout"
                 --jobs "$sanitize_jobs" --deadline "$sanitize_deadline")
  [[ -n $filter ]] && sanitize_args+=(--filter "$filter")
  "$root/scripts/sanitize-gpu-tests.sh" "${sanitize_args[@]}" >"$out/sanitize.log" 2>&1 || status=1
  [[ -f $out/sanitize-summary.txt ]] && while IFS= read -r l; do summary+=("$l"); done <"$out/sanitize-summary.txt"
  note "sanitize     details: sanitize-<tool>.txt (per test), sanitize-jobs.txt (per shard), sanitize-cases.txt"
  # (sanitize-summary.txt's own "failures:" line names sanitize-failures.txt: the failed jobs' reports, bounded)
fi

# ---- 3. benchmarks ----------------------------------------------------------------------------------------
best_pairs() {  # markdown table file -> fastest row per config (column 4 = wall ms)
  awk -F'|' '/^\| [a-z0-9]+ \|/ && $5 ~ /^ *[0-9.]+ *$/ {
      c=$2; gsub(/ /,"",c); v=$5+0; if (!(c in best) || v < best[c]) { best[c]=v; row[c]=$0 } }
    END { for (c in row) print row[c] }' "$1"
}
if [[ $do_bench == 1 ]]; then
  # A test left running on the GPU (e.g. by a timeout around an earlier ctest, which kills ctest but not its
  # test) would share the device with the benchmarks and hold its memory: stop gknn's test binaries first.
  stray=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader 2>/dev/null |
          awk -F', *' '$2 ~ /\/tests\// {print $1}')
  if [[ -n $stray ]]; then
    note "bench        stopped test processes still on the GPU: $(echo $stray)"
    kill $stray 2>/dev/null
    sleep 2
  fi
  shopt -s nullglob
  benches=("$build"/bench/gknn_gpu_bench*)
  [[ ${#benches[@]} == 0 ]] && note "bench        no gknn_gpu_bench* executable in $build/bench"
  for exe in "${benches[@]}"; do
    [[ -x $exe ]] || continue
    name=$(basename "$exe")
    args=(--configs "$configs" --repeats "$repeats" --out "$out/$name.md" --csv "$out/$name.csv")
    [[ -n $bench_filter ]] && args+=(--filter "$bench_filter")
    t0=$SECONDS
    "$exe" "${args[@]}" >"$out/$name.log" 2>&1
    rc=$?
    note "bench        $name: rc $rc ($((SECONDS - t0)) s; table: $name.md, log: $name.log)"
    [[ $rc != 0 ]] && status=1 && summary+=("$(tail -n 3 "$out/$name.log")")
    [[ -f $out/$name.md ]] && while IFS= read -r l; do summary+=("  fastest: $l"); done < <(best_pairs "$out/$name.md")
    # Issue 12: each distance stage against its ceilings, as a PNG where python3 has matplotlib (else later, on
    # the CSV that comes back: the script runs standalone).
    if [[ -f $out/$name.csv ]]; then
      if python3 -c 'import matplotlib' >/dev/null 2>&1; then
        python3 "$root/bench/gpu/plot_distance.py" --csv "$out/$name.csv" --png "$out/${name}_distance.png" \
          >"$out/${name}_distance.log" 2>&1
        note "bench        plot_distance.py: rc $? (${name}_distance.png, table in ${name}_distance.log)"
      else
        note "bench        plot_distance.py: skipped, python3 has no matplotlib (later: python3 bench/gpu/plot_distance.py --csv $name.csv --png ${name}_distance.png)"
      fi
    fi
  done
  # Other GPU benchmarks (gknn_*_bench except the CPU one) run with their defaults, $OUT exported.
  for exe in "$build"/bench/gknn_*_bench; do
    name=$(basename "$exe")
    [[ -x $exe && $name != gknn_cpu_bench && $name != gknn_gpu_bench* ]] || continue
    t0=$SECONDS
    extra=()  # the join benchmark keeps its point sets for the cKDTree peer below, tables into $out
    [[ $name == gknn_join_bench ]] && extra=(--data-dir "$out/join-data" --csv "$out/join.csv" --md "$out/join.md")
    OUT=$out "$exe" "${extra[@]}" >"$out/$name.log" 2>&1
    rc=$?
    note "bench        $name: rc $rc ($((SECONDS - t0)) s; log: $name.log)"
    [[ $rc != 0 ]] && status=1 && summary+=("$(tail -n 3 "$out/$name.log")")
  done
  if [[ -d $out/join-data ]]; then  # seed 004's peer: scipy's cKDTree on the same point sets
    t0=$SECONDS
    python3 "$root/bench/join/ckdtree_peer.py" --data-dir "$out/join-data" --workers "$(nproc)" \
      --csv "$out/join_ckdtree.csv" >"$out/join_ckdtree.log" 2>&1
    note "bench        ckdtree_peer.py: rc $? ($((SECONDS - t0)) s; table: join_ckdtree.csv)"
    rm -rf "$out/join-data"  # large; not worth bringing back
  fi
  if [[ $do_torch == 1 ]] && ls "$build"/python/gknn/_gknn*.so >/dev/null 2>&1; then
    # The Python module's search of torch CUDA tensors next to the same search from C++ (issue 15), with the
    # interpreter the build chose (it holds torch on the device image).
    t0=$SECONDS
    py=$(sed -n 's/^_Python_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")
    PYTHONPATH="$build/python" "${py:-python3}" "$root/bench/gpu/python_search.py" --cli "$build/tools/gknn" \
      >"$out/python_search.log" 2>&1
    note "bench        python_search.py: rc $? ($((SECONDS - t0)) s; log: python_search.log)"
    while IFS= read -r l; do summary+=("  python:  $l"); done < <(tail -n 6 "$out/python_search.log")
  fi
  if [[ $do_torch == 1 ]]; then
    t0=$SECONDS
    python3 "$root/bench/gpu/torch_peer.py" --configs "$configs" --repeats "$repeats" --out "$out/torch_peer.md" \
      >"$out/torch_peer.log" 2>&1
    note "bench        torch_peer.py: rc $? ($((SECONDS - t0)) s; table: torch_peer.md)"
    while IFS= read -r l; do summary+=("  torch:   $l"); done < <(grep -E '^\| [a-z0-9]+ \| torch' "$out/torch_peer.md" 2>/dev/null)
  fi
fi

# ---- summary (last) ---------------------------------------------------------------------------------------
{
  echo "================ device-check summary ================"
  for l in "${summary[@]}"; do [[ -n $l ]] && echo "$l"; done
  echo "result: $([[ $status == 0 ]] && echo OK || echo FAILED)   (full logs in $out)"
} | tee "$out/summary.txt"
exit $status
