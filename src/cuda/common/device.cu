#include <map>
#include <mutex>

#include "cuda/common/device.cuh"
#include "cuda/common/error.cuh"

namespace gknn::cuda_detail {

const DeviceProps& device_props(int ordinal) {
  static std::mutex mutex;
  static std::map<int, DeviceProps> cache;
  std::lock_guard<std::mutex> lock(mutex);
  GKNN_CUDA_TRY(cudaSetDevice(ordinal));
  auto it = cache.find(ordinal);
  if (it != cache.end()) return it->second;
  cudaDeviceProp p{};
  GKNN_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal));
  DeviceProps d;
  d.ordinal = ordinal;
  d.sm_count = p.multiProcessorCount;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.shared_per_block = p.sharedMemPerBlock;
  d.shared_per_block_optin = p.sharedMemPerBlockOptin;
  d.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  // CUDA 13 dropped cudaDeviceProp::maxTexture1DLinear; the attribute query works on every version.
  GKNN_CUDA_TRY(cudaDeviceGetAttribute(&d.max_texture_1d_linear, cudaDevAttrMaxTexture1DLinearWidth, ordinal));
  d.texture_alignment = p.textureAlignment;
  return cache.emplace(ordinal, d).first->second;
}

void device_memory(size_t* free_bytes, size_t* total_bytes) { GKNN_CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes)); }

}  // namespace gknn::cuda_detail
