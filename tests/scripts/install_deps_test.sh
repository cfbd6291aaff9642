#!/usr/bin/env bash
# install_deps_test.sh SCRIPT [MISSING_OPTIONAL [PREFIX_PATH]]: scripts/install-deps.sh on a machine where everything the build needs exists, with
# apt-get, dpkg-query and sudo replaced by failing stubs first on the PATH (an offline GPU host whose CMake and
# compilers do not come from Debian packages). The script must decide by probing what the build finds, succeed
# without calling apt-get, and when something is really missing name it with the command that would install it.
# MISSING_OPTIONAL: the optional packages the build's configure did not find on this machine (space-separated); the
# script may ask apt-get for those (any order), never for anything else, and must still succeed. Every run's output
# is printed, so a failure under `ctest --output-on-failure` shows what the script saw. PREFIX_PATH: the build's
# CMAKE_PREFIX_PATH, handed to the script as the build hands it (e.g. headers unpacked with dpkg -x on a GPU host).
set -uo pipefail
script=$1
missing_optional=${2:-}
prefix_args=()
[[ -n ${3:-} ]] && prefix_args=("-DCMAKE_PREFIX_PATH=$3")
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
  env PATH="$work/bin:$PATH" "$@" bash "$script" "${prefix_args[@]}" >"$work/$name.out" 2>&1
  rc=$?
  echo "---- $name: exit $rc"
  cat "$work/$name.out"
}
output_has() { grep -qF -- "$2" "$work/$1.out" || fail "$1: output lacks '$2'"; }
# listed PREFIX NAME: the words that follow PREFIX on the line of $work/NAME.out that starts with it, sorted (the
# script lists packages in its own order, the build's configure in another).
listed() { sed -n "s/^$1//p" "$work/$2.out" | head -n1 | tr ' ' '\n' | grep . | sort -u | xargs; }
sorted_words() { tr ' ' '\n' <<<"$1" | grep . | sort -u | xargs; }
install_line='install-deps: to install them: sudo apt-get install -y --no-install-recommends '
goes_on_line='install-deps: the build goes on without the optional '

run present
[[ $rc == 0 ]] || fail "present: exit $rc, expected 0 (everything required exists here)"
# The package tools may be reached directly (root) or through sudo (the sudo stub logs the whole command line).
asked=$(sed -n 's/.*apt-get .* install -y --no-install-recommends //p' "$work/calls.log" | head -n1)
grep -v -- "apt-get .* install -y --no-install-recommends " "$work/calls.log" | grep -v -- "apt-get .* update\$" | grep -q . &&
  fail "present: called the package tools for more than an install: $(cat "$work/calls.log")"
if [[ -z $missing_optional ]]; then
  [[ -s $work/calls.log ]] && fail "present: called the package tools: $(cat "$work/calls.log")"
  output_has present "everything the build needs is present"
else
  # The script must never ask apt-get for what the build's configure found (the point of probing: an offline GPU host
  # whose tools come from elsewhere). It may find more than the configure's mirror of its probes did (a probe of its
  # own is not a second copy of CMake's search): that is reported, not failed.
  expected=$(sorted_words "$missing_optional")
  asked_sorted=$(sorted_words "$asked")
  extra=$(comm -23 <(tr ' ' '\n' <<<"$asked_sorted" | grep .) <(tr ' ' '\n' <<<"$expected" | grep .) | xargs)
  [[ -z $extra ]] ||
    fail "present: asked apt-get for '$extra', which the build's configure found (asked '$asked', missing '$expected')"
  unasked=$(comm -13 <(tr ' ' '\n' <<<"$asked_sorted" | grep .) <(tr ' ' '\n' <<<"$expected" | grep .) | xargs)
  [[ -n $unasked ]] && echo "note: the configure did not find '$unasked', the script did (not an error)"
  if [[ -n $asked ]]; then
    [[ $(listed "$goes_on_line" present) == "$asked_sorted" ]] ||
      fail "present: '$goes_on_line' names '$(listed "$goes_on_line" present)', expected what it asked for: '$asked_sorted'"
  else
    output_has present "everything the build needs is present"
  fi
fi

run optional GKNN_DEPS_EXTRA="gknn-test-optional optional cmake find_package(GknnNoSuchPackage)"
[[ $rc == 0 ]] || fail "optional: exit $rc, expected 0 (only an optional part is missing)"
grep -q "apt-get .* install " "$work/calls.log" || fail "optional: apt-get install was not tried"
[[ " $(listed "$install_line" optional) " == *" gknn-test-optional "* ]] ||
  fail "optional: no '$install_line... gknn-test-optional' line"
[[ " $(listed "$goes_on_line" optional) " == *" gknn-test-optional "* ]] ||
  fail "optional: no '$goes_on_line... gknn-test-optional' line"

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
