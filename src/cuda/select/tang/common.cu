// common.cu: the bottom-up construction of the hierarchical partition, shared by the three Tang queues.
#include <algorithm>
#include <cstdint>

#include "cuda/select/tang/kernel.cuh"

namespace gknn::detail::cuda::tang {
namespace {

constexpr int kBuildBlock = kPolicy.build_threads;

/// Level l+1 from level l: thread t computes entry t of the rows x dst_size output (consecutive threads read
/// consecutive groups of the same row, so the warp's reads and writes are coalesced).
__global__ void build_level_kernel(HierarchyView hv, int level, float* dst_keys, int64_t* dst_labels, int64_t rows) {
  const int32_t dst_size = hv.size[level + 1];
  const int32_t src_size = hv.size[level];
  const int64_t total = rows * dst_size;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t / dst_size;
    const int32_t p = static_cast<int32_t>(t - r * dst_size);
    const int64_t first = int64_t(p) * hv.group;
    const int32_t last = static_cast<int32_t>(std::min<int64_t>(first + hv.group, src_size));
    float key;
    int64_t label;
    group_best(hv.row(level, r), static_cast<int32_t>(first), last, key, label);
    dst_keys[t] = key;
    if (dst_labels) dst_labels[t] = label;
  }
}

}  // namespace

HierarchyView build_hierarchy(const SelectInput& in, const HierarchyLayout& layout, int group, void* workspace,
                              cudaStream_t stream) {
  HierarchyView hv;
  hv.levels = layout.levels;
  hv.group = group;
  hv.size[0] = static_cast<int32_t>(in.cols);
  hv.keys[0] = in.keys;
  hv.labels[0] = in.labels;
  hv.stride[0] = in.stride;
  auto* base = static_cast<unsigned char*>(workspace);
  for (int level = 0; level < layout.levels; ++level) {
    const int up = level + 1;
    auto* keys = reinterpret_cast<float*>(base + layout.key_offset[up]);
    auto* labels = in.labels ? reinterpret_cast<int64_t*>(base + layout.label_offset[up]) : nullptr;
    hv.size[up] = layout.size[up];
    hv.stride[up] = layout.size[up];
    const int64_t total = in.rows * layout.size[up];
    const int64_t blocks = std::min<int64_t>((total + kBuildBlock - 1) / kBuildBlock, int64_t(1) << 20);
    build_level_kernel<<<static_cast<unsigned>(blocks), kBuildBlock, 0, stream>>>(hv, level, keys, labels, in.rows);
    GKNN_CUDA_CHECK_LAUNCH();
    hv.keys[up] = keys;
    hv.labels[up] = labels;
  }
  return hv;
}

}  // namespace gknn::detail::cuda::tang
