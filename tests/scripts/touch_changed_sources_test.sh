#!/usr/bin/env bash
# touch_changed_sources_test.sh SCRIPT: scripts/touch-changed-sources.sh on a temporary tree: nothing touched before
# a first build, everything when a build has no stored sums, then exactly the sources whose content changed (or that
# are new) even when they carry an old modification time, none after --save, and names with spaces.
set -uo pipefail
script=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/gknn-touch-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # description, expected, actual
  [[ $2 == "$3" ]] || { echo "FAIL: $1: expected '$2', got '$3'"; failures=$((failures + 1)); }
}
root=$work/tree build=$work/tree/build-device
mkdir -p "$root/src" "$build"
echo a >"$root/src/x.cpp"
echo b >"$root/src/y.cu"
echo c >"$root/CMakeLists.txt"
echo d >"$root/notes.md"  # not a source: never counted
expect "never built" 0 "$("$script" "$root" "$build")"
touch "$build/CMakeCache.txt"
expect "built without stored sums: every source" 3 "$("$script" "$root" "$build")"
"$script" "$root" "$build" --save
expect "after --save" 0 "$("$script" "$root" "$build")"
echo changed >"$root/src/x.cpp"
touch -d '2000-01-01' "$root/src/x.cpp" "$build/CMakeCache.txt"
expect "content changed, old time" 1 "$("$script" "$root" "$build")"
[[ $(stat -c %Y "$root/src/x.cpp") -gt $(date -d '2001-01-01' +%s) ]] || {
  echo "FAIL: x.cpp was not touched"
  failures=$((failures + 1))
}
[[ $(stat -c %Y "$build/CMakeCache.txt") -lt $(date -d '2001-01-01' +%s) ]] || {
  echo "FAIL: the build directory's files are not sources"
  failures=$((failures + 1))
}
mkdir -p "$root/src/a b"
echo e >"$root/src/a b/sp ace.hpp"
touch -d '2000-01-01' "$root/src/a b/sp ace.hpp"
expect "a new file with a space in its path" 2 "$("$script" "$root" "$build")"
[[ $(stat -c %Y "$root/src/a b/sp ace.hpp") -gt $(date -d '2001-01-01' +%s) ]] || {
  echo "FAIL: the new file was not touched"
  failures=$((failures + 1))
}
"$script" "$root" "$build" --save
expect "saved again" 0 "$("$script" "$root" "$build")"
echo "touch_changed_sources_test: $failures failure(s)"
exit $((failures > 0))
