#!/usr/bin/env bash
# sanitize_gpu_tests_test.sh SCRIPT: scripts/sanitize-gpu-tests.sh against a hand-written CTest tree (two gpu
# entries: a fake GoogleTest binary and a pytest stand-in; one cpu entry) with a stub compute-sanitizer
# (COMPUTE_SANITIZER), so its bookkeeping is checked where no GPU is: shards capped by the number of test cases,
# the CTest environment and working directory passed on, the leak check for everything but pytest, every ERROR
# SUMMARY and RACECHECK SUMMARY of a log added up, and a test that exits 77, prints no summary or does not start
# named as not clean, and a failed job's sanitizer reports and GoogleTest failure lines in sanitize-failures.txt.
# CTEST: the ctest to use (default: ctest on the PATH).
set -uo pipefail
script=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/gknn-sanitize-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A fake GoogleTest binary: 3 cases; prints what it was given and exits with $FAKE_RC (default 0).
cat >"$work/fake_gtest" <<'EOF'
#!/usr/bin/env bash
[[ " $* " == *" --gtest_list_tests "* ]] && { printf 'Suite.\n  a\n  b\n  c\n'; exit 0; }
echo "args: $* shard ${GTEST_SHARD_INDEX:-}/${GTEST_TOTAL_SHARDS:-} sanitize ${GKNN_TEST_SANITIZE:-}" \
  "env ${FAKE_ENV:-} pwd $PWD"
echo "[ RUN      ] Suite.a"
if [[ ${FAKE_RC:-0} == 1 ]]; then
  printf 'suite.cpp:7: Failure\nExpected equality of these values:\n  want\n  got\n[  FAILED  ] Suite.a (12 ms)\n'
else
  echo "[       OK ] Suite.a (12 ms)"
fi
echo "[==========] 1 tests from 1 test suite ran. (12 ms total)"
exit "${FAKE_RC:-0}"
EOF
printf '#!/usr/bin/env bash\necho "pytest stand-in $*"\nexit "${FAKE_RC:-0}"\n' >"$work/python-stand-in"
# The stub sanitizer: logs its arguments, runs the command, prints the summary a real tool prints. FAKE_ERRORS: errors
# per checked process; FAKE_NO_SUMMARY=1: no summary line at all (a tool that died).
cat >"$work/compute-sanitizer" <<EOF
#!/usr/bin/env bash
[[ \$1 == --help ]] && { printf '  --kernel-name arg    Filter\n  --kernel-name-exclude arg    Exclude\n'; exit 0; }
# The script's probe of two exclusions (its target makes no CUDA call): answered as CUDA 13.0's tool does, not logged.
[[ \${@: -1} == true ]] && { echo "========= Error: Target application terminated before first instrumented API call"; exit 255; }
echo "\$*" >>"$work/sanitizer-calls.log"
tool=memcheck
while [[ \$1 == --* ]]; do
  case \$1 in --tool) tool=\$2; shift 2 ;; --leak-check|--target-processes|--print-limit|--kernel-name|--kernel-name-exclude) shift 2 ;; *) shift ;; esac
done
"\$@"; rc=\$?
[[ \${FAKE_NO_SUMMARY:-0} == 1 ]] && exit \$rc
n=\${FAKE_ERRORS:-0}
if [[ \$tool == racecheck ]]; then
  ((n > 0)) && echo "========= Error: Race reported between Write access at k()+0x10 and Read access at k()+0x20"
  echo "========= RACECHECK SUMMARY: \$n hazards displayed (\$n errors, 0 warnings)"
else
  echo "========= ERROR SUMMARY: \$n errors"
fi
exit \$rc
EOF
chmod +x "$work/fake_gtest" "$work/python-stand-in" "$work/compute-sanitizer"

# The CTest tree: fake_gtest (gpu, COST 80 => 4 x 80 s guessed, 4 shards of 100 s (memcheck) or 5 of 75 s
# (racecheck), capped at its 3 cases, environment and working
# directory set), python_entry (gpu, not GoogleTest: one job, no leak check), cpu_only (label cpu: never run).
build=$work/build
mkdir -p "$build/tests" "$work/wd"
cat >"$build/CTestTestfile.cmake" <<EOF
add_test(fake_gtest "$work/fake_gtest" "--gtest_filter=Suite.*" "--require-gpu")
set_tests_properties(fake_gtest PROPERTIES LABELS "gpu" COST "80" ENVIRONMENT "FAKE_ENV=from_ctest"
                     WORKING_DIRECTORY "$work/wd")
add_test(python_entry "$work/python-stand-in" "run.py" "gpu")
set_tests_properties(python_entry PROPERTIES LABELS "gpu")
add_test(cpu_only "/bin/false")
set_tests_properties(cpu_only PROPERTIES LABELS "cpu")
EOF

# run NAME [ENV=VALUE...] -- [OPTIONS...]: the script, output in $work/NAME.out, exit status in $rc, its --out in $out.
run() {
  local name=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  out=$work/out-$name
  mkdir -p "$out"
  : >"$work/sanitizer-calls.log"
  env COMPUTE_SANITIZER="$work/compute-sanitizer" "${envs[@]}" bash "$script" --build "$build" --out "$out" \
    --jobs 4 --timeout 60 "$@" >"$work/$name.out" 2>&1
  rc=$?
  echo "---- $name: exit $rc"
  cat "$work/$name.out"
}
has() { grep -qF -- "$2" "$1" || fail "$1 lacks: $2"; }

run clean -- --tools memcheck,racecheck
[[ $rc == 0 ]] || fail "clean run exited $rc"
[[ -s $out/sanitize-failures.txt ]] && fail "a clean run wrote failure excerpts"
grep -q 'failures:' "$work/clean.out" && fail "a clean run's summary names failures"
has "$work/clean.out" "sanitize     memcheck: 0 errors over 2 tests"
has "$work/clean.out" "sanitize     racecheck: 0 errors over 1 tests"  # pytest: memcheck and synccheck only
has "$work/clean.out" "7 jobs, 4 at a time"  # 3 shards x 2 tools + pytest under memcheck
[[ $(grep -c ' fake_gtest ' "$out/sanitize-jobs.txt") == 6 ]] || fail "fake_gtest: not 3 shards per tool"
grep -q 'cpu_only' "$out/sanitize-jobs.txt" && fail "a cpu entry was run"
has "$out/sanitize-logs/memcheck-fake_gtest-2.log" "shard 2/3 sanitize 1 env from_ctest pwd $work/wd"
has "$out/sanitize-logs/memcheck-fake_gtest-0.log" "--gtest_filter=Suite.* --require-gpu"
has "$out/sanitize-logs/memcheck-python_entry-0.log" "pytest stand-in run.py gpu"
[[ $(grep -c -- '--tool memcheck --leak-check full' "$work/sanitizer-calls.log") == 3 ]] ||
  fail "the leak check is not on for every GoogleTest shard"
grep -- '--tool memcheck' "$work/sanitizer-calls.log" | grep python-stand-in | grep -q -- --leak-check &&
  fail "the leak check is on for pytest"
grep -- '--tool memcheck' "$work/sanitizer-calls.log" | grep python-stand-in | grep -q -- '--kernel-name kns=gknn' ||
  fail "pytest's jobs check more than gknn's kernels"
grep -- '--tool memcheck' "$work/sanitizer-calls.log" | grep fake_gtest | grep -q -- --kernel-name &&
  fail "a GoogleTest shard checks only some kernels"
has "$out/sanitize-cases.txt" "12 memcheck-fake_gtest-0 Suite.a OK"

run errors FAKE_ERRORS=2 -- --tools memcheck,racecheck
[[ $rc == 1 ]] || fail "a run with errors exited $rc"
has "$work/errors.out" "sanitize     memcheck: 8 errors over 2 tests"  # 2 per process, 4 processes
has "$work/errors.out" "sanitize     racecheck: 6 errors over 1 tests"
grep -- '--tool racecheck' "$work/sanitizer-calls.log" | grep -q -- '--kernel-name-exclude kns=RadixSort' ||
  fail "racecheck checks CUB's radix sorts"
# One exclusion only: a second --kernel-name-exclude made racecheck fail to handle a hardware exception (17acd31).
grep -- '--tool racecheck' "$work/sanitizer-calls.log" | grep -q -- '--kernel-name-exclude kns=nvjet' &&
  fail "racecheck leaves out cuBLAS's nvjet GEMMs (a second exclusion)"
has "$work/errors.out" "fake_gtest(rc=0 errors=6)"
has "$work/errors.out" "sanitize     failures: 7 jobs; their reports and failed cases in sanitize-failures.txt"
has "$out/sanitize-failures.txt" \
  "#### racecheck fake_gtest 0/3 rc=0 errors=2 (log: sanitize-logs/racecheck-fake_gtest-0.log)"
has "$out/sanitize-failures.txt" "========= Error: Race reported between Write access"
has "$out/sanitize-failures.txt" "========= RACECHECK SUMMARY: 2 hazards"

run failed FAKE_RC=1 -- --tools synccheck
[[ $rc == 1 ]] || fail "a run of failing tests exited $rc"
has "$work/failed.out" "fake_gtest(rc=1 errors=0)"
has "$out/sanitize-failures.txt" "[ RUN      ] Suite.a"
has "$out/sanitize-failures.txt" "suite.cpp:7: Failure"
has "$out/sanitize-failures.txt" "Expected equality of these values:"
has "$out/sanitize-failures.txt" "[  FAILED  ] Suite.a (12 ms)"

run skipped FAKE_RC=77 -- --tools synccheck
[[ $rc == 1 ]] || fail "a run of skipped tests exited $rc"
has "$work/skipped.out" "fake_gtest(rc=77 errors=0)"

run no_summary FAKE_NO_SUMMARY=1 -- --tools synccheck --filter python
[[ $rc == 1 ]] || fail "a run without summary lines exited $rc"
has "$work/no_summary.out" "synccheck: 0 errors over 1 tests"
has "$work/no_summary.out" "python_entry(rc=0 errors=0+?)"  # unknown: no summary line

run late -- --tools memcheck --deadline 10  # every job would get under 20 s: none starts
[[ $rc == 1 ]] || fail "a run past its deadline exited $rc"
has "$work/late.out" "fake_gtest(rc=notrun errors=0+?)"
[[ -s $work/sanitizer-calls.log ]] && fail "a job started after the deadline"

echo "$failures failure(s)"
[[ $failures == 0 ]]
