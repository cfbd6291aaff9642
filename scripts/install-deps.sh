#!/usr/bin/env bash
# install-deps.sh [CMAKE ARGUMENTS...]: makes sure that what the build needs is there, and installs through apt only
# what is really missing, so that `make run` and `make test` work on a fresh machine and cost a few seconds on a
# prepared one.
#
# "There" means found the way the build will find it, not "a Debian package of that name is registered": tools on
# the PATH (CMake >= 3.25, a C++20 compiler), libraries by CMake's own find_package in a scratch configure (given the
# same CMake arguments as the build, e.g. -DCMAKE_PREFIX_PATH=...). GPU hosts (containers, clusters, cloud images)
# often have CMake, compilers and libraries from outside Debian and no route to a package mirror.
#
# When apt-get cannot install (no network, not root and no sudo, not Debian) the script names what is missing and
# the command that would install it. It exits 0 when everything required is there (a missing optional part only
# leaves a feature out of the build, e.g. the HDF5 reader) and 1 otherwise. GKNN_SKIP_DEPS=1 skips the step.
# CUDA is not installed here: the CUDA backend is built when nvcc is present (/usr/local/cuda/bin or PATH).
set -euo pipefail

if [[ ${GKNN_SKIP_DEPS:-0} == 1 ]]; then
  echo "install-deps: skipped (GKNN_SKIP_DEPS=1)"
  exit 0
fi

# What the build needs, one line each: "<debian package> <required|optional> <probe>", the probe being
#   command NAME [MIN_VERSION]  an executable on the PATH (its version: the first x.y[.z] of `NAME --version`)
#   cxx20                       the C++ compiler CMake will use ($CXX, else c++, else g++) compiles C++20
#   pymodule NAME               a Python module that `python3` on the PATH or /usr/bin/python3 imports (the two
#                               interpreters python/CMakeLists.txt chooses from)
#   cmake CODE                  CMake commands (on one line) run in a scratch project (CMake >= 3.25); found when
#                               <P>_FOUND is true for the package P of CODE's first find_package
#   cmake-or-pip CODE           as cmake, else found when one of the pymodule interpreters runs `-m <P> --cmakedir`
#                               (a pip-installed package, the fallback python/CMakeLists.txt takes for pybind11)
#   cmake-header FILE           a header that CMake's find_path finds in the scratch project (the default include
#                               directories or CMAKE_PREFIX_PATH/include, e.g. a package unpacked by `dpkg -x`)
requirements=(
  "cmake              required command cmake 3.25"
  "g++                required cxx20"
  "make               required command make"
  "libopenblas-dev    required cmake set(BLA_VENDOR OpenBLAS) find_package(BLAS)"
  "libcli11-dev       required cmake find_package(CLI11)"
  "libgtest-dev       required cmake find_package(GTest)"
  "libhdf5-dev        optional cmake find_package(HDF5 COMPONENTS C)"
  "nlohmann-json3-dev optional cmake find_package(nlohmann_json 3)"
  "libnanoflann-dev   optional cmake-header nanoflann.hpp"
  "libopenmpi-dev     optional cmake find_package(MPI COMPONENTS CXX)"
  "openmpi-bin        optional command mpiexec"
  "python3-dev        optional cmake find_package(Python 3.8 COMPONENTS Interpreter Development.Module)"
  "pybind11-dev       optional cmake-or-pip set(PYBIND11_NOPYTHON ON) find_package(pybind11 CONFIG)"
  "libdlpack-dev      optional cmake find_package(dlpack CONFIG)"
  "python3-numpy      optional pymodule numpy"
  "python3-pytest     optional pymodule pytest"
  "clang              optional command clang++"
  "libfuzzer-14-dev   optional file /usr/lib/llvm-*/lib/libFuzzer.a"
  "libclang-rt-14-dev optional file /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"
  "libomp-dev         optional file /usr/lib/llvm-*/lib/libomp.so*"
)
# For trying the script (and its test): more lines of the same form, separated by newlines.
if [[ -n ${GKNN_DEPS_EXTRA:-} ]]; then
  while IFS= read -r line; do [[ -n $line ]] && requirements+=("$line"); done <<<"$GKNN_DEPS_EXTRA"
fi
cmake_args=("$@")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/gknn-deps.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# ---- probes -------------------------------------------------------------------------------------------------
version_at_least() {  # have want: true when version `have` >= `want`
  [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1) == "$2" ]]
}

probe_command() {  # name [min_version]
  command -v "$1" >/dev/null 2>&1 || return 1
  [[ $# -lt 2 ]] && return 0
  local have
  have=$("$1" --version 2>/dev/null | grep -m1 -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' || true)
  [[ -n $have ]] && version_at_least "$have" "$2"
}

probe_python() {  # args...: true when `python3` on the PATH or /usr/bin/python3 runs them successfully
  local python
  for python in "$(command -v python3 || true)" /usr/bin/python3; do
    [[ -x $python ]] && "$python" "$@" >/dev/null 2>&1 && return 0
  done
  return 1
}

probe_cxx20() {
  local cxx=${CXX:-}
  [[ -z $cxx ]] && cxx=$(command -v c++ || command -v g++ || true)
  [[ -n $cxx ]] || return 1
  printf '%s\n' '#include <concepts>' '#include <span>' \
    'template <std::integral T> constexpr T twice(T x) { return 2 * x; }' \
    'int main() { int a[2] = {0, 1}; return twice(std::span<int>(a).front()); }' >"$scratch/cxx20.cpp"
  "$cxx" -std=c++20 -fsyntax-only "$scratch/cxx20.cpp" >/dev/null 2>&1
}

# Runs every "cmake" probe in one scratch configure; writes the packages found to $scratch/found.txt.
# Returns 1 when the probe itself could not run (no CMake >= 3.25, no working compiler): those entries are unknown.
run_cmake_probes() {
  probe_command cmake 3.25 || return 1
  local dir=$scratch/probe
  mkdir -p "$dir"
  {
    echo 'cmake_minimum_required(VERSION 3.25)'
    echo 'project(gknn_deps_probe LANGUAGES C CXX)'
    local line package code name
    for line in "${requirements[@]}"; do
      read -r package _ kind code <<<"$line"
      if [[ $kind == cmake-header ]]; then  # the build's find_path (src/CMakeLists.txt), without its cache entry
        printf 'block()\n  find_path(probe_dir %s NO_CACHE)\n  if(probe_dir)\n    %s\n  endif()\nendblock()\n' "$code" \
          "file(APPEND \"\${CMAKE_BINARY_DIR}/found.txt\" \"$package\\n\")"
        continue
      fi
      [[ $kind == cmake || $kind == cmake-or-pip ]] || continue
      name=$(grep -oE 'find_package\( *[A-Za-z0-9_]+' <<<"$code" | head -n1 | sed 's/.*( *//')
      printf 'block()\n  %s\n  if(%s_FOUND)\n    file(APPEND "${CMAKE_BINARY_DIR}/found.txt" "%s\\n")\n  endif()\nendblock()\n' \
        "${code//) /)$'\n'  }" "$name" "$package"
    done
  } >"$dir/CMakeLists.txt"
  if ! cmake -S "$dir" -B "$dir/build" --no-warn-unused-cli "${cmake_args[@]}" >"$scratch/probe.log" 2>&1; then
    echo "install-deps: the scratch CMake configure failed; its last lines:" >&2
    tail -n 5 "$scratch/probe.log" >&2
    return 1
  fi
  touch "$dir/build/found.txt"
  cp "$dir/build/found.txt" "$scratch/found.txt"
}

# Fills missing_required and missing_optional with the packages of the requirements not found.
probe_all() {
  missing_required=() missing_optional=()
  local cmake_ran=1
  rm -f "$scratch/found.txt"
  run_cmake_probes || cmake_ran=0
  local line package need kind rest found
  for line in "${requirements[@]}"; do
    read -r package need kind rest <<<"$line"
    found=0
    case $kind in
      command) probe_command $rest && found=1 ;;
      cxx20) probe_cxx20 && found=1 ;;
      pymodule) probe_python -c "import $rest" && found=1 ;;
      file) for pattern in $rest; do compgen -G "$pattern" >/dev/null && found=1; done ;;
      cmake|cmake-header) [[ $cmake_ran == 1 ]] && grep -qxF "$package" "$scratch/found.txt" && found=1 ;;
      cmake-or-pip)
        [[ $cmake_ran == 1 ]] && grep -qxF "$package" "$scratch/found.txt" && found=1
        [[ $found == 0 ]] && probe_python -m "$(grep -oE 'find_package\( *[A-Za-z0-9_]+' <<<"$rest" | sed 's/.*( *//')" \
          --cmakedir && found=1 ;;
      *) echo "install-deps: bad requirement line '$line' (probe kind $kind)" >&2; exit 2 ;;
    esac
    [[ $found == 1 ]] && continue
    if [[ $need == required ]]; then missing_required+=("$package"); else missing_optional+=("$package"); fi
  done
}

# ---- installing ---------------------------------------------------------------------------------------------
apt_install() {  # packages...; sets why_not on failure
  if ! command -v apt-get >/dev/null 2>&1; then
    why_not="apt-get is not available (not a Debian/Ubuntu system)"
    return 1
  fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      why_not="not root, and sudo is not available"
      return 1
    fi
    sudo=(sudo)
    [[ -t 0 ]] || sudo=(sudo -n)  # no password prompt that nobody can answer (CI, pipes)
  fi
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o Acquire::Retries=0
             -o Acquire::http::Timeout=20)
  echo "install-deps: installing $*"
  "${apt[@]}" update || echo "install-deps: apt-get update failed; trying the package lists already there" >&2
  if ! "${apt[@]}" install -y --no-install-recommends "$@"; then
    why_not="apt-get install failed (no network or package mirror? no permission?)"
    return 1
  fi
}

probe_all
missing=("${missing_required[@]}" "${missing_optional[@]}")
if ((${#missing[@]} == 0)); then
  echo "install-deps: everything the build needs is present"
  exit 0
fi
echo "install-deps: not found: ${missing[*]}"
why_not=""
if apt_install "${missing[@]}"; then
  probe_all  # confirm: an installed package is only useful when the build finds it
  missing=("${missing_required[@]}" "${missing_optional[@]}")
  ((${#missing[@]} == 0)) && exit 0
  why_not="installed, but the build still does not find them (see the CMake arguments, e.g. CMAKE_PREFIX_PATH)"
fi

echo "install-deps: could not install ${missing[*]}: $why_not" >&2
echo "install-deps: to install them: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
echo "install-deps: (or install them from elsewhere where CMake finds them; GKNN_SKIP_DEPS=1 skips this step)" >&2
if ((${#missing_required[@]} > 0)); then
  echo "install-deps: the build cannot go on without: ${missing_required[*]}" >&2
  exit 1
fi
echo "install-deps: the build goes on without the optional ${missing_optional[*]}" >&2
exit 0
