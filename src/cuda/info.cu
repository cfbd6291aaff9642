// info.cu: the visible CUDA devices for gknn::cuda_devices(). Never throws: `gknn info` must work on a
// machine whose driver is missing or broken, it just lists no device.
#include <cuda_runtime.h>

#include "core/backend.hpp"

namespace gknn::detail::cuda {

std::vector<DeviceInfo> devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // reset the (non-sticky) error so later runtime calls do not report it
    return {};
  }
  int previous = 0;
  cudaGetDevice(&previous);
  std::vector<DeviceInfo> out;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, ordinal) != cudaSuccess) continue;
    DeviceInfo d;
    d.ordinal = ordinal;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.multiprocessors = p.multiProcessorCount;
    d.global_memory = p.totalGlobalMem;
    d.l2_bytes = static_cast<size_t>(p.l2CacheSize);
    d.shared_per_block_optin = p.sharedMemPerBlockOptin;
    size_t free_bytes = 0, total_bytes = 0;
    // Free memory needs a context on that device; on failure report 0 rather than omit the device.
    if (cudaSetDevice(ordinal) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
      d.free_memory = free_bytes;
    out.push_back(d);
  }
  cudaGetLastError();
  cudaSetDevice(previous);
  return out;
}

}  // namespace gknn::detail::cuda
