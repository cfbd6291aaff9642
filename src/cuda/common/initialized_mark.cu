// initialized_mark.cu: see initialized_mark.cuh.
#include <vector>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <nvtx3/nvToolsExtMemCudaRt.h>

#include "core/env_switch.hpp"
#include "cuda/common/initialized_mark.cuh"

namespace gknn::detail::cuda {

namespace {

/// GKNN_NO_INITIALIZED_MARK set (not "0"): no mark is made (initialized_mark.cuh).
bool marks_disabled() {
  static const bool off = detail::env_switch_on("GKNN_NO_INITIALIZED_MARK");
  return off;
}

}  // namespace

void mark_initialized(const float* matrix, int64_t rows, int64_t cols, int64_t stride, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || marks_disabled()) return;
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("gknn");
  auto mark = [&](const nvtxMemVirtualRangeDesc_t* ranges, size_t count) {
    nvtxMemMarkInitializedBatch_t batch{};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.regionDescCount = count;
    batch.regionDescElementSize = sizeof(nvtxMemVirtualRangeDesc_t);
    batch.regionDescElements = ranges;
    nvtxMemCudaMarkInitialized(domain, stream, 0, &batch);
  };
  if (stride == cols) {  // contiguous rows (every pipeline tile): one range, nothing allocated on this hot path
    const nvtxMemVirtualRangeDesc_t whole{static_cast<size_t>(rows * cols) * sizeof(float), matrix};
    return mark(&whole, 1);
  }
  std::vector<nvtxMemVirtualRangeDesc_t> ranges;  // one per row: the gap between rows was not written
  ranges.reserve(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) ranges.push_back({static_cast<size_t>(cols) * sizeof(float), matrix + r * stride});
  mark(ranges.data(), ranges.size());
}

}  // namespace gknn::detail::cuda
