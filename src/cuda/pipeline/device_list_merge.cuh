// device_list_merge.cuh: what the rest of the CUDA backend calls of device_list_merge.cu (backend.hpp declares
// DeviceListMerge itself).
#pragma once

namespace gknn::detail::cuda {

/// Frees the merge's kept device buffers and streams (part of release_cached_device_resources).
void release_list_merge_buffers();

}  // namespace gknn::detail::cuda
