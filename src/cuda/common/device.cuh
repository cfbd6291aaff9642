// device.cuh: THE device-properties struct: what kernels, planners and `gknn info` need of a device, read in one
// place (device.cu) and cached per device for the library.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime.h>

namespace gknn::detail::cuda {

struct DeviceProps {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;           ///< compute capability
  size_t global_memory = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  size_t shared_per_block = 0;        ///< default limit (48 KiB)
  size_t shared_per_block_optin = 0;  ///< limit after cudaFuncSetAttribute
  size_t l2_bytes = 0;
  int max_texture_1d_linear = 0;      ///< elements a linear texture may address
  size_t texture_alignment = 0;       ///< bytes a linear texture's base pointer must be aligned to
};

/// Cached per device ordinal; sets the current device; throws gknn::Error (Cuda) when the driver fails.
const DeviceProps& device_props(int ordinal);
/// Reads the properties of `ordinal` without caching, throwing or changing the current device (for `gknn info`,
/// which must work with a broken driver): the first CUDA error, or cudaSuccess with *out filled.
cudaError_t read_device_props(int ordinal, DeviceProps* out);
/// Free and total device memory now (cudaMemGetInfo; free counts the idle bytes kept by gknn's pool of the current
/// device, buffer.cuh PooledDeviceMemory, which a failed allocation gets back).
void device_memory(size_t* free_bytes, size_t* total_bytes);

}  // namespace gknn::detail::cuda
