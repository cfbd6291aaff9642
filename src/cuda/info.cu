// info.cu: the visible CUDA devices for gknn::cuda_devices(). Never throws: `gknn info` must work on a
// machine whose driver is missing or broken, it just lists no device.
#include <cuda_runtime.h>

#include "core/backend.hpp"
#include "cuda/common/device.cuh"

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
    detail::cuda::DeviceProps p;
    if (detail::cuda::read_device_props(ordinal, &p) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    DeviceInfo d;
    d.ordinal = ordinal;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.multiprocessors = p.sm_count;
    d.global_memory = p.global_memory;
    d.l2_bytes = p.l2_bytes;
    d.shared_per_block_optin = p.shared_per_block_optin;
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
