#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer harnesses of fuzz/ (clang, ASan+UBSan, CPU only) into BUILD and runs each for
# SECONDS seconds, one after the other. Usage:
#   scripts/fuzz.sh [BUILD=build-fuzz] [SECONDS=60] [HARNESS...]    (make fuzz FUZZ_SECONDS=N does this)
#   scripts/fuzz.sh --check                                         exit 0 when clang + libFuzzer are usable
# Limits (a violation is a finding): 1 s per input (-timeout), 2 GiB RSS, and no single allocation above
# 64 MiB (-malloc_limit_mb; 2 GiB for hdf5, see below): inputs are at most a few KiB, so a reader asking for
# more trusted a header.
# New coverage goes to BUILD/corpus/<harness>/ (fuzz/corpus/<harness>/ and fuzz/regressions/<harness>/ are read
# as seeds, never written);
# a crashing input is written to BUILD/artifacts/<harness>/ and the script fails naming it: fix the reader and
# keep the input in fuzz/regressions/<harness>/ (replayed by the fuzz_regressions_test of `make test`).
# Logs with libFuzzer's final statistics: BUILD/logs/<harness>.log.
set -euo pipefail
cd "$(dirname "$0")/.."

CXX_FUZZ=${CXX_FUZZ:-clang++}
CC_FUZZ=${CC_FUZZ:-clang}

toolchain_ok() {
  command -v "$CXX_FUZZ" >/dev/null || return 1
  local dir
  dir=$(mktemp -d)
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' >"$dir/t.cpp"
  "$CXX_FUZZ" -fsanitize=fuzzer,address,undefined "$dir/t.cpp" -o "$dir/t" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

if [[ ${1:-} == --check ]]; then
  if toolchain_ok; then exit 0; else exit 1; fi
fi

build=${1:-build-fuzz}
seconds=${2:-60}
shift $(($# > 2 ? 2 : $#))
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(vecs npy hdf5 cli)

if ! toolchain_ok; then
  echo "fuzz: ERROR: $CXX_FUZZ with libFuzzer is not usable (install clang and libfuzzer-14-dev:" \
       "scripts/install-deps.sh)" >&2
  exit 3
fi

cmake -S . -B "$build" -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGKNN_FUZZ=ON -DGKNN_CUDA=OFF -DGKNN_BUILD_BENCH=OFF \
      -DGKNN_BUILD_TESTS=OFF -DGKNN_NATIVE=OFF ${FUZZ_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc 2>/dev/null || echo 2)}" --target "${harnesses[@]/#/fuzz_}"

# innermost_frame: reads a sanitizer/libFuzzer report on stdin and prints the first stack frame that is not
# malloc/new or memcpy (interceptors), the sanitizer or libFuzzer runtime, or libc (the alarm signal's trampoline):
# where the fault, the hang or the oversized allocation happened.
innermost_frame() {
  grep -E '^ +#[0-9]+ 0x' |
    grep -vE 'in (__interceptor_|__asan|__sanitizer|__lsan|__ubsan|fuzzer::|malloc|calloc|realloc|operator new|std::__new_allocator|__libc_|__GI_|__mem|__str|main )|libFuzzer|compiler-rt|libclang_rt|/libc\.so|sysdeps/' |
    head -n1 || true  # no frame at all is an answer too (an empty line), not a failure under pipefail
}

# in_libhdf5 FRAME: true when the frame is libhdf5's (its library, or an H5 function).
in_libhdf5() { [[ $1 == *libhdf5* || $1 =~ \ in\ H5 ]]; }

# buffer_owner_frame: reads an AddressSanitizer memory-error report on stdin and prints the innermost frame (outside
# the runtimes) that owns the buffer it names: the stack frame it lies in ("is located in stack of thread ... in
# frame"), or the code that allocated it ("allocated by thread ... here:"); nothing for other reports. A libhdf5
# call that overruns a buffer gknn handed it faults inside libhdf5, but the defect is gknn's (the buffer was too
# small for what it asked libhdf5 to write): such an input is a finding, not a libhdf5 notice.
buffer_owner_frame() {
  awk '/is located in stack of thread/ { stack = 1; next }
       stack && /^ +#[0-9]+ 0x/ { print; exit }
       /allocated by thread .* here:/ { heap = 1; next }
       heap && /^ *$/ { exit }
       heap { print }' | innermost_frame
}

# classify_hdf5_artifacts DIR: replays every input fork mode recorded (crash-, leak-, timeout-, oom-), alone, and
# prints "gknn FILE (frame)" for one whose innermost frame outside the runtimes is not libhdf5's (a fault, leak, loop
# or allocation of gknn's own: a finding) and "libhdf5 FILE (frame)" otherwise (a libhdf5 defect: a notice). The
# replay's allocation limit is 64 MiB: an input of a few KiB that makes gknn allocate more is a finding (its reads
# are bounded by the stored bytes), and an RSS overflow, whose report has no culprit stack, gets one this way.
replay_hdf5() {  # FILE MALLOC_LIMIT_MB: libFuzzer's report of one input run alone
  ASAN_OPTIONS="allocator_may_return_null=1:${ASAN_OPTIONS:-}" \
    LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0" \
    timeout 60 "$build/fuzz/fuzz_hdf5" -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb="$2" "$1" 2>&1 || true
}

classify_hdf5_artifacts() {
  local file out frame owner
  for file in "$1"/crash-* "$1"/leak-* "$1"/timeout-* "$1"/oom-*; do
    [[ -e $file ]] || continue
    out=$(replay_hdf5 "$file" 64)
    # An RSS overflow is reported without a culprit stack: replayed with an 8 MiB allocation limit, the first larger
    # allocation (on the way to the overflow) names who was allocating.
    grep -q "out-of-memory (used:" <<<"$out" && out=$(replay_hdf5 "$file" 8)
    frame=$(innermost_frame <<<"$out")
    owner=$(buffer_owner_frame <<<"$out")
    if [[ -n $owner ]] && ! in_libhdf5 "$owner"; then
      echo "gknn $file (overruns the buffer of ${owner#"${owner%%[! ]*}"})"
    elif [[ -z $frame ]] || in_libhdf5 "$frame"; then
      echo "libhdf5 $file ${frame:+(${frame#"${frame%%[! ]*}"})}"
    else
      echo "gknn $file (${frame#"${frame%%[! ]*}"})"
    fi
  done
}

failed=()
for h in "${harnesses[@]}"; do
  rm -rf "$build/artifacts/$h"
  mkdir -p "$build/corpus/$h" "$build/artifacts/$h" "$build/logs"
  seeds=("fuzz/corpus/$h")
  [[ -d fuzz/regressions/$h ]] && seeds+=("fuzz/regressions/$h")
  # fuzz_hdf5 runs in fork mode and goes on past hangs, oversized allocations and crashes: libhdf5 1.10.8 itself
  # never returns on some corrupt global heaps, mallocs sizes read from corrupt object headers (up to 4 GiB seen)
  # and overruns its global-heap buffers (fuzz/known-issues/README.md). Every input it records is replayed and
  # attributed afterwards (classify_hdf5_artifacts): one whose fault is in gknn's frames fails the run.
  # gknn's own HDF5 allocations are bounded by the dataset's stored bytes (io_test checks it).
  mode=() malloc_limit=64
  [[ $h == hdf5 ]] && mode=(-fork=1 -ignore_timeouts=1 -ignore_ooms=1 -ignore_crashes=1) malloc_limit=2048
  echo "fuzz: $h for $seconds s"
  # lsan.supp: leaks inside libhdf5's own error paths only (see the file); gknn's leaks stay findings.
  # allocator_may_return_null: a C malloc of an absurd size returns NULL as glibc's does (libhdf5 asks for sizes
  # read from corrupt metadata and handles NULL); operator new still aborts, and -malloc_limit_mb still reports
  # any allocation above 64 MiB, so gknn's own allocations stay checked.
  rc=0
  LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0" \
       ASAN_OPTIONS="allocator_may_return_null=1:${ASAN_OPTIONS:-}" "$build/fuzz/fuzz_$h" "$build/corpus/$h" \
       "${seeds[@]}" "${mode[@]}" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 \
       -malloc_limit_mb="$malloc_limit" \
       -print_final_stats=1 -artifact_prefix="$build/artifacts/$h/" \
       ${FUZZ_ARGS:-} >"$build/logs/$h.log" 2>&1 || rc=$?
  # Fork mode exits with the status of its LAST job, whatever it was: for hdf5 the attributed artifacts decide.
  [[ $h == hdf5 ]] && grep -q -- "-fork=" "$build/logs/$h.log" && rc=0  # (it started: not a launch failure)
  if ((rc != 0)); then
    failed+=("$h")
    echo "fuzz: $h FAILED; input(s): $(ls "$build/artifacts/$h" | tr '\n' ' ')" >&2
    grep -E "ERROR|SUMMARY|gknn fuzz" "$build/logs/$h.log" | head -5 >&2 || true
  fi
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE" "$build/logs/$h.log" | tr '\n' ' ' || true
  ((${#mode[@]})) && { grep -E "^#[0-9]+: cov:" "$build/logs/$h.log" | tail -n1 || true; }
  if [[ $h == hdf5 ]]; then
    while read -r owner file where; do
      if [[ $owner == gknn ]]; then
        failed+=("$h")
        echo "fuzz: $h FAILED: $file faults, hangs or allocates too much in gknn's code: $where" >&2
      else
        echo "fuzz: NOTICE: $h: $file faults, hangs or allocates too much inside libhdf5 (not fatal, see" \
          "fuzz/known-issues/README.md) $where"
      fi
    done < <(classify_hdf5_artifacts "$build/artifacts/$h")
  fi
  echo
done
if ((${#failed[@]})); then
  echo "fuzz: findings in: ${failed[*]} (logs: $build/logs/, inputs: $build/artifacts/)" >&2
  exit 1
fi
echo "fuzz: all harnesses clean"
