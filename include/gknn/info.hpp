// gknn/info.hpp: what this build and machine offer (for `gknn info` and bug reports).
#pragma once

#include <string>
#include <vector>

namespace gknn {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;
  int multiprocessors = 0;
  size_t global_memory = 0;
  size_t free_memory = 0;
  size_t l2_bytes = 0;
  size_t shared_per_block_optin = 0;
};

struct BuildInfo {
  std::string version;
  bool cuda = false;          ///< compiled with the CUDA backend
  std::string cuda_archs;     ///< CMAKE_CUDA_ARCHITECTURES
  bool openmp = false;
  bool blas = false;
  bool hdf5 = false;
  bool join_kdtree = false;   ///< the join's CPU kd-tree (nanoflann found at configure time): cpu/hybrid joins
  std::string compiler;
  std::string build_type;
};

BuildInfo build_info();
/// CPU name, core count and SIMD features (avx2, avx512f, ...).
std::string cpu_description();
/// Visible CUDA devices (empty without CUDA or without a device).
std::vector<DeviceInfo> cuda_devices();

}  // namespace gknn
