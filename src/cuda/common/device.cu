#include <map>
#include <mutex>
#include <utility>

#include "cuda/common/buffer.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/error.cuh"

namespace gknn::detail::cuda {

cudaError_t read_device_props(int ordinal, DeviceProps* out) {
  cudaDeviceProp p{};
  if (const cudaError_t e = cudaGetDeviceProperties(&p, ordinal); e != cudaSuccess) return e;
  DeviceProps d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.global_memory = p.totalGlobalMem;
  d.sm_count = p.multiProcessorCount;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.shared_per_block = p.sharedMemPerBlock;
  d.shared_per_block_optin = p.sharedMemPerBlockOptin;
  d.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  // CUDA 13 dropped cudaDeviceProp::maxTexture1DLinear; the attribute query works on every version.
  if (const cudaError_t e = cudaDeviceGetAttribute(&d.max_texture_1d_linear, cudaDevAttrMaxTexture1DLinearWidth,
                                                   ordinal);
      e != cudaSuccess)
    return e;
  d.texture_alignment = p.textureAlignment;
  *out = std::move(d);
  return cudaSuccess;
}

const DeviceProps& device_props(int ordinal) {
  static std::mutex mutex;
  static std::map<int, DeviceProps> cache;
  std::lock_guard<std::mutex> lock(mutex);
  GKNN_CUDA_TRY(cudaSetDevice(ordinal));
  auto it = cache.find(ordinal);
  if (it != cache.end()) return it->second;
  DeviceProps d;
  GKNN_CUDA_TRY(read_device_props(ordinal, &d));
  return cache.emplace(ordinal, std::move(d)).first->second;
}

void device_memory(size_t* free_bytes, size_t* total_bytes) {
  GKNN_CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes));
  int device = 0;
  GKNN_CUDA_TRY(cudaGetDevice(&device));
  *free_bytes += pooled_idle_bytes(device);  // kept by gknn's pool, given back when an allocation needs it
}

}  // namespace gknn::detail::cuda
