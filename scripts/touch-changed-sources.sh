#!/usr/bin/env bash
# scripts/touch-changed-sources.sh ROOT BUILD [--save]: makes the build see every source whose content changed
# since BUILD was last built from ROOT, whatever its modification time says.
#
# Why: the device machine receives a copy of the working tree with the files' own modification times and keeps
# build outputs between calls. A file edited here after one call copied the tree but before that call's build
# finished arrives later with a time older than its object, so make/ninja skip it and the tests run stale code
# (seen on 2026-11-24: the join's driver.cpp). Content is the only safe test.
#
# Without --save: compares the sources' SHA-1 sums with BUILD/.source-sums (written by the last successful build)
# and touches every source that differs or is new; when BUILD was built but has no sums (an older script), touches
# every source. Prints how many it touched. With --save (after a successful build): stores the current sums.
set -euo pipefail
root=${1:?usage: touch-changed-sources.sh ROOT BUILD [--save]}
build=${2:?usage: touch-changed-sources.sh ROOT BUILD [--save]}
stored=$build/.source-sums

sums() {  # every file a build reads, relative to ROOT, with its SHA-1, in a stable order
  (cd "$root" && find . -path ./.git -prune -o -path './build*' -prune -o -path ./device-out -prune \
     -o -path ./.device-deps -prune -o -type f \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.h' \
     -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.inc' -o -name '*.def' -o -name '*.in' \
     -o -name '*.cmake' -o -name CMakeLists.txt -o -name '*.py' \) -print0 | sort -z | xargs -0 -r sha1sum)
}

if [[ ${3:-} == --save ]]; then
  sums >"$stored.tmp" && mv "$stored.tmp" "$stored"
  exit 0
fi

[[ -f $build/CMakeCache.txt ]] || { echo 0; exit 0; }  # never built: everything compiles anyway
now=$(sums)
if [[ -f $stored ]]; then
  changed=$(diff <(printf '%s\n' "$now") "$stored" | sed -n 's/^< [0-9a-f]\{40\}  //p' || true)
else
  changed=$(printf '%s\n' "$now" | sed 's/^[0-9a-f]\{40\}  //')
fi
if [[ -z $changed ]]; then
  echo 0
  exit 0
fi
(cd "$root" && printf '%s\n' "$changed" | xargs -d '\n' touch)
printf '%s\n' "$changed" | wc -l
