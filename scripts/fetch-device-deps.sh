#!/usr/bin/env bash
# fetch-device-deps.sh: downloads, on a machine whose apt reaches a Debian mirror, the Debian packages that the
# device machine's image lacks, into .device-deps/ (git-ignored). The device tool carries that folder when its
# `carry` list names it (carry: [".device-deps"]); there scripts/device-check.sh unpacks the .debs with `dpkg -x`
# into build-device-deps/ (never into /) and hands that prefix to CMake. See docs/device-check.md.
#
# Only header-only packages belong here: nothing is installed, so a package with a shared library would build but
# not load. Today: libnanoflann-dev (nanoflann.hpp, the join's CPU kd-tree; 184 kB) and libdlpack-dev (dlpack.h:
# the Python module's __dlpack__ route for CUDA tensors, which python_gpu_test's DLPack test needs).
#
#   scripts/fetch-device-deps.sh            # download what is missing from .device-deps/
#   scripts/fetch-device-deps.sh --force    # download again
set -euo pipefail

packages=(libnanoflann-dev libdlpack-dev)

root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/.device-deps
force=0
[[ ${1:-} == --force ]] && force=1

command -v apt-get >/dev/null || { echo "fetch-device-deps: apt-get is not available here" >&2; exit 1; }
mkdir -p "$dir"
for package in "${packages[@]}"; do
  if [[ $force == 0 ]] && compgen -G "$dir/${package}_*.deb" >/dev/null; then
    echo "fetch-device-deps: $package already in .device-deps/ ($(basename "$(ls "$dir/${package}"_*.deb | head -n1)"))"
    continue
  fi
  rm -f "$dir/${package}"_*.deb
  # apt-get download writes into the current directory; run as root, its sandbox user cannot write there (a
  # harmless warning), so the sandbox is switched off for this one call.
  (cd "$dir" && apt-get -q -o APT::Sandbox::User=root download "$package")
done
ls -l "$dir"/*.deb
echo "fetch-device-deps: $(du -sh "$dir" | cut -f1) in .device-deps/; carry it to the device: carry [\".device-deps\"]"
