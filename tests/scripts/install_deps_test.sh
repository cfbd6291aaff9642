#!/usr/bin/env bash
# install_deps_test.sh SCRIPT [MISSING_OPTIONAL]: scripts/install-deps.sh on a machine where everything the build needs exists, with
# apt-get, dpkg-query and sudo replaced by failing stubs first on the PATH (an offline GPU host whose CMake and
# compilers do not come from Debian packages). The script must decide by probing what the build finds, succeed
# without calling apt-get, and when something is really missing name it with the command that would install it.
# MISSING_OPTIONAL: the optional packages the build's configure did not find on this machine (space-separated); the
# script may ask apt-get for exactly those and must still succeed.
set -uo pipefail
script=$1
missing_optional=${2:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/gknn-deps-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
for tool in apt-get dpkg-query sudo; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls.log"\necho "stub %s: no network" >&2\nexit 100\n' \
    "$tool" "$work" "$tool" >"$work/bin/$tool"
  chmod +x "$work/bin/$tool"
done
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME [ENV=VALUE...]: runs the script with the stubs, output in $work/NAME.out, exit status in $rc.
run() {
  local name=$1
  shift
  : >"$work/calls.log"
  env PATH="$work/bin:$PATH" "$@" bash "$script" >"$work/$name.out" 2>&1
  rc=$?
  echo "---- $name: exit $rc"
  cat "$work/$name.out"
}
output_has() { grep -qF -- "$2" "$work/$1.out" || fail "$1: output lacks '$2'"; }

run present
[[ $rc == 0 ]] || fail "present: exit $rc, expected 0 (everything required exists here)"
if [[ -z $missing_optional ]]; then
  [[ -s $work/calls.log ]] && fail "present: called the package tools: $(cat "$work/calls.log")"
  output_has present "everything the build needs is present"
else
  grep -v "^apt-get .*install -y --no-install-recommends $missing_optional\$" "$work/calls.log" | grep -v "^apt-get .* update" |
    grep -q . && fail "present: asked for more than the missing optional '$missing_optional': $(cat "$work/calls.log")"
  output_has present "the build goes on without the optional $missing_optional"
fi

run optional GKNN_DEPS_EXTRA="gknn-test-optional optional cmake find_package(GknnNoSuchPackage)"
[[ $rc == 0 ]] || fail "optional: exit $rc, expected 0 (only an optional part is missing)"
grep -q "^apt-get .* install " "$work/calls.log" || fail "optional: apt-get install was not tried"
output_has optional "sudo apt-get install -y --no-install-recommends gknn-test-optional"
output_has optional "the build goes on without the optional gknn-test-optional"

run required GKNN_DEPS_EXTRA="gknn-test-required required command cmake 999.0
gknn-test-compiler-ok required cxx20"
[[ $rc == 1 ]] || fail "required: exit $rc, expected 1 (CMake 999 is required)"
output_has required "the build cannot go on without: gknn-test-required"
grep -q "gknn-test-compiler-ok" "$work/required.out" && fail "required: the C++20 compiler was reported missing"

run skipped GKNN_SKIP_DEPS=1 GKNN_DEPS_EXTRA="gknn-test-required required command no-such-tool"
[[ $rc == 0 ]] || fail "skipped: exit $rc"
output_has skipped "skipped (GKNN_SKIP_DEPS=1)"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
