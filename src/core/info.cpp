// info.cpp: what this build and machine offer, for `gknn info` and bug reports.
#include "gknn/info.hpp"

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/backend.hpp"
#include "core/host_parallel.hpp"

// Compile definitions set by src/CMakeLists.txt; the fallbacks keep a stray build (no CMake) compiling.
#ifndef GKNN_VERSION
#define GKNN_VERSION "unknown"
#endif
#ifndef GKNN_BUILD_TYPE
#define GKNN_BUILD_TYPE "unknown"
#endif
#ifndef GKNN_CXX_COMPILER
#define GKNN_CXX_COMPILER "unknown"
#endif

namespace gknn {
namespace {

/// "model name : Intel(R) Xeon(R) ..." from /proc/cpuinfo (Linux x86); "unknown CPU" elsewhere.
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown CPU" : line.substr(start);
  }
  return "unknown CPU";
}

/// The SIMD levels the CPU kernels care about, as the running CPU reports them.
std::string simd_features() {
  std::string out;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  auto add = [&out](bool has, const char* name) {
    if (!has) return;
    out += out.empty() ? "" : " ";
    out += name;
  };
  add(__builtin_cpu_supports("sse4.2"), "sse4_2");
  add(__builtin_cpu_supports("avx"), "avx");
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
#endif
  return out.empty() ? "none detected" : out;
}

}  // namespace

BuildInfo build_info() {
  BuildInfo b;
  b.version = GKNN_VERSION;
  b.build_type = GKNN_BUILD_TYPE;
  b.compiler = GKNN_CXX_COMPILER;
#ifdef GKNN_HAS_CUDA
  b.cuda = true;
#endif
#ifdef GKNN_CUDA_ARCHS
  b.cuda_archs = GKNN_CUDA_ARCHS;
#endif
#ifdef _OPENMP
  b.openmp = true;
#endif
#ifdef GKNN_HAS_HDF5
  b.hdf5 = true;
#endif
  b.join_kdtree = GKNN_HAS_NANOFLANN != 0;
  b.blas = true;  // OpenBLAS is a required dependency (CPU Gemm distances)
  return b;
}

std::string cpu_description() {
  std::ostringstream out;
  out << cpu_model() << " (" << std::thread::hardware_concurrency() << " hardware threads";
  if (const int quota = detail::cpu_quota_cpus(); quota > 0) out << ", a CPU quota of " << quota;
  out << "; gknn uses " << detail::host_team() << "; SIMD: " << simd_features() << ")";
  return out.str();
}

std::vector<DeviceInfo> cuda_devices() { return detail::cuda::devices(); }

}  // namespace gknn
