// kernel.cuh: the CUDA kernel of Tang et al.'s queues (one thread per row, one warp per 32 rows) and the
// host launcher every queue family instantiates (insertion_queue.cu, heap_queue.cu, merge_queue.cu).
#pragma once

#include <cstdint>

#include "cuda/common/error.cuh"
#include "cuda/select/select.cuh"
#include "cuda/select/tang/buffer.cuh"
#include "cuda/select/tang/entry.cuh"
#include "cuda/select/tang/layout.hpp"
#include "cuda/select/tang/queues.cuh"
#include "cuda/select/tang/search.cuh"

namespace gknn::detail::cuda::tang {

inline constexpr int kWarp = 32;
/// Columns per shared-memory tile: one per lane (lane j loads column c0 + j of each of the warp's rows), so not a
/// tuning number but the warp's width.
inline constexpr int kTile = kWarp;

/// Builds the levels of the hierarchical partition in `workspace` (laid out by `layout`) on `stream` and
/// returns the view the kernel searches (common.cu).
HierarchyView build_hierarchy(const SelectInput& in, const HierarchyLayout& layout, int group, void* workspace,
                              cudaStream_t stream);

/// Scan of a whole row with coalesced reads. Threads of a warp own different rows, so reading "my next
/// element" would touch 32 rows at once. Instead the warp loads a tile of its 32 rows x 32 columns row by row
/// (lane j reads column c0 + j: one 128-byte transaction per row) into shared memory, and each thread then
/// reads its own row of the tile (padding 33 puts the 32 lanes in 32 different banks).
template <bool Buffered, class Queue, class E>
__device__ __forceinline__ void scan_tiles(Queue& q, CandidateBuffer<E>& buffer, float (*tile)[kTile + 1],
                                           const SelectInput& in, int64_t row0, int lane, bool active,
                                           const QueueShape& s) {
  const int64_t* labels = (in.labels && active) ? in.labels + (row0 + lane) * in.stride : nullptr;
  for (int64_t c0 = 0; c0 < in.cols; c0 += kTile) {
    const int width = in.cols - c0 < kTile ? static_cast<int>(in.cols - c0) : kTile;
#pragma unroll
    for (int r = 0; r < kWarp; ++r) {
      const int64_t rr = row0 + r;
      tile[r][lane] = (rr < in.rows && lane < width) ? in.keys[rr * in.stride + c0 + lane] : INFINITY;
    }
    __syncwarp();
    for (int j = 0; j < width; ++j)
      offer<DeviceWarp, Buffered>(q, buffer, active, tile[lane][j], labels, static_cast<int32_t>(c0 + j), s);
    __syncwarp();  // the tile is overwritten by the next load
  }
}

/// One warp per 32 consecutive rows (block = one warp: warps never wait for each other, and small row
/// counts spread over every SM). Lanes past the last row run every warp-uniform step with nothing to offer.
template <template <int, class> class QueueT, int K, class E, bool Buffered, bool Hierarchical>
__global__ void __launch_bounds__(kWarp) tang_select_kernel(SelectInput in, SelectOutput out, QueueShape s,
                                                            HierarchyView hv) {
  const int lane = static_cast<int>(threadIdx.x);
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kWarp;
  const int64_t row = row0 + lane;
  const bool active = row < in.rows;

  QueueT<K, E> q;
  q.reset(s);
  CandidateBuffer<E> buffer;
  if constexpr (Hierarchical) {
    Candidate cand[K];
    const auto row_at = [&](int level) { return hv.row(level, row); };
    top_down<DeviceWarp, Buffered>(q, buffer, cand, row_at, hv.levels, hv.group, active, s);
  } else {
    __shared__ float tile[kWarp][kTile + 1];
    scan_tiles<Buffered>(q, buffer, tile, in, row0, lane, active, s);
    drain<DeviceWarp, Buffered>(q, buffer, s);
  }
  q.finish(s);
  if (!active) return;
  float* out_keys = out.keys + row * out.stride;
  int64_t* out_labels = out.labels + row * out.stride;
  for (int j = 0; j < s.k; ++j) {
    const E e = q.sorted(j, s);
    out_keys[j] = e.key;
    out_labels[j] = e.label(in.label_offset);
  }
}

template <template <int, class> class QueueT, int K, class E>
void launch_bucket(const SelectInput& in, const SelectOutput& out, const QueueShape& s, const HierarchyView& hv,
                   bool buffered, bool hierarchical, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((in.rows + kWarp - 1) / kWarp));
  if (buffered && hierarchical) tang_select_kernel<QueueT, K, E, true, true><<<grid, kWarp, 0, stream>>>(in, out, s, hv);
  else if (buffered) tang_select_kernel<QueueT, K, E, true, false><<<grid, kWarp, 0, stream>>>(in, out, s, hv);
  else if (hierarchical) tang_select_kernel<QueueT, K, E, false, true><<<grid, kWarp, 0, stream>>>(in, out, s, hv);
  else tang_select_kernel<QueueT, K, E, false, false><<<grid, kWarp, 0, stream>>>(in, out, s, hv);
  GKNN_CUDA_CHECK_LAUNCH();
}

template <template <int, class> class QueueT, class E>
void launch_entry(const SelectInput& in, const SelectOutput& out, const QueueShape& s, const HierarchyView& hv,
                  bool buffered, bool hierarchical, cudaStream_t stream) {
  with_bucket(QueueBuckets{}, s.capacity, "Tang queue", [&](auto bucket) {
    launch_bucket<QueueT, decltype(bucket)::value, E>(in, out, s, hv, buffered, hierarchical, stream);
  });
}

/// The SelectFn body of every Tang queue. `merges` says whether the queue is the merge queue (whose capacity
/// is rounded up to whole levels).
template <template <int, class> class QueueT>
void run_tang(bool merges, const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  const TangOptions& t = ctx.options.tang;
  check_options(t, in.cols, k);
  if (in.rows == 0) return;

  QueueShape s;
  s.k = static_cast<int>(k);
  s.m = t.m;
  s.capacity = static_cast<int>(merges ? merge_capacity(k, t.m) : k);
  s.aligned = t.aligned;

  HierarchyView hv;
  bool hierarchical = false;
  if (t.hierarchical) {
    const HierarchyLayout layout = hierarchy_layout(in.rows, in.cols, k, t.group, in.labels != nullptr);
    if (layout.levels > 0) {  // cols <= k: nothing to prune, a plain scan
      hv = build_hierarchy(in, layout, t.group, ctx.workspace.get(layout.bytes), ctx.stream);
      hierarchical = true;
    }
  }
  if (in.labels) launch_entry<QueueT, LabelEntry>(in, out, s, hv, t.buffered, hierarchical, ctx.stream);
  else launch_entry<QueueT, ColumnEntry>(in, out, s, hv, t.buffered, hierarchical, ctx.stream);
}

}  // namespace gknn::detail::cuda::tang
