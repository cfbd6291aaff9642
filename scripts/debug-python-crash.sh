#!/usr/bin/env bash
# debug-python-crash.sh [BUILD=build-device] [PYTHON_CODE]: runs a snippet of the Python module (default
# `import gknn; gknn.info()`) with Python's fault handler and a native backtrace on SIGSEGV/SIGABRT/SIGBUS, and
# under gdb when it is installed. For a crash of the module that only happens on some machine (the device): one
# call prints the Python frames and the native frames of the fault. Builds the module target when it is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-device}
code=${2:-"import gknn; print(gknn.info()['backends']['cuda']['available'])"}
python=$(sed -n 's/^_Python_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
python=${python:-python3}
if ! ls "$build"/python/gknn/_gknn*.so >/dev/null 2>&1; then
  cmake --build "$build" -j "$(nproc)" --target gknn_python >/dev/null || { echo "cannot build gknn_python"; exit 1; }
fi
shim=$(mktemp -d)/segv.so
cat >"${shim%.so}.c" <<'EOF'
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
static void on_fault(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  static const char msg[] = "\n*** native backtrace (debug-python-crash.sh) ***\n";
  write(2, msg, sizeof msg - 1);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}
__attribute__((constructor)) static void install(void) {
  signal(SIGSEGV, on_fault);
  signal(SIGABRT, on_fault);
  signal(SIGBUS, on_fault);
}
EOF
cc -shared -fPIC -o "$shim" "${shim%.so}.c" || shim=""
echo "== $python: $code"
# Python's fault handler prints the Python frames first and then chains to the shim, which prints the native ones.
PYTHONPATH="$build/python" LD_PRELOAD="$shim" timeout 120 "$python" -X faulthandler -c "$code" 2>&1 | head -120
echo "== exit ${PIPESTATUS[0]}"
gdb=$(command -v gdb || command -v cuda-gdb || true)  # the device image has cuda-gdb only
if [[ -n $gdb ]]; then
  echo "== $gdb"
  PYTHONPATH="$build/python" timeout 300 "$gdb" -batch -ex run -ex bt -ex "info sharedlibrary" --args "$python" -c "$code" \
    2>&1 | grep -vE "^\[(New|Thread) " | tail -80
fi
