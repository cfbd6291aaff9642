#!/usr/bin/env bash
# install-deps.sh: installs the Debian/Ubuntu packages gknn needs to build and test, and only those missing,
# so that `make run` and `make test` work on a fresh machine and cost nothing on a prepared one.
# CUDA is not installed here: the CUDA backend is built when nvcc is present (/usr/local/cuda/bin or PATH).
set -euo pipefail

packages=(
  cmake g++ make pkg-config      # toolchain (CMake >= 3.25: Debian 12 / Ubuntu 23.04 or newer)
  libopenblas-dev                # SGEMM of the CPU fast path
  libhdf5-dev                    # ann-benchmarks .hdf5 files (optional in CMake, installed for completeness)
  libcli11-dev                   # the gknn command-line tool
  libgtest-dev                   # tests
  nlohmann-json3-dev             # tests parse `gknn bench --json` back
  clang libfuzzer-14-dev libclang-rt-14-dev libomp-dev  # `make fuzz` (libFuzzer, clang's OpenMP)
)

if ! command -v dpkg-query >/dev/null; then
  echo "install-deps: not a Debian-based system; install by hand: ${packages[*]}" >&2
  exit 0  # CMake will name whatever is still missing
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for package in "${packages[@]}"; do
  installed "$package" || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "install-deps: missing packages ${missing[*]}, and apt-get is not available: install them by hand" >&2
  exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
