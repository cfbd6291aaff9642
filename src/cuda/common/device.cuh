// device.cuh: the properties kernels and planners need, read once per device.
#pragma once

#include <cstddef>

namespace gknn::cuda_detail {

struct DeviceProps {
  int ordinal = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  size_t shared_per_block = 0;        ///< default limit (48 KiB)
  size_t shared_per_block_optin = 0;  ///< limit after cudaFuncSetAttribute
  size_t l2_bytes = 0;
  int max_texture_1d_linear = 0;      ///< elements a linear texture may address
  size_t texture_alignment = 0;       ///< bytes a linear texture's base pointer must be aligned to
};

/// Cached per device ordinal; sets the current device.
const DeviceProps& device_props(int ordinal);
/// Free and total device memory now (cudaMemGetInfo).
void device_memory(size_t* free_bytes, size_t* total_bytes);

}  // namespace gknn::cuda_detail
