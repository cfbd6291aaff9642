// query_launch.cuh: the host launch loop shared by the distance kernels whose grid covers the nq x nb key
// matrix directly (naive, shared_reduce, atomic, garcia_global, garcia_texture): grid.x walks the base rows,
// grid.y the queries.
//
// grid.y is limited to kMaxGridY, so a long query range is split into several launches; each launch sees its
// chunk as queries [0, nq) of query and output pointers shifted to the chunk's first query.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda/common/error.cuh"
#include "cuda/distance/distance.cuh"
#include "cuda/distance/key_ops.cuh"

namespace gknn::detail::cuda {

/// How a kernel's grid covers the key matrix.
struct QueryGrid {
  dim3 block;
  int64_t base_per_block;     ///< base rows one block computes (grid.x = ceil(nb / base_per_block))
  int64_t queries_per_block;  ///< queries one block computes (grid.y = ceil(nq / queries_per_block))
};

/// Launches kernel_for(MetricTag<M>{}) for the key metric in.metric over every (query, base row) pair.
/// kernel_for returns a __global__ function with the parameters
///   (queries, query_stride, nq, base, base_stride, nb, dim, p, out, out_stride)
/// where `base` is the object the kernel reads the base rows through (a pointer, or a texture object) and nq
/// counts the queries of this launch (a kernel with one query per grid row does not need it).
template <class Base, class KernelFor>
void launch_over_queries(const DistanceInput& in, const DistanceOutput& out, cudaStream_t stream,
                         const QueryGrid& grid, Base base, KernelFor kernel_for) {
  const unsigned blocks_x = static_cast<unsigned>((in.nb + grid.base_per_block - 1) / grid.base_per_block);
  const int64_t queries_per_launch = kMaxGridY * grid.queries_per_block;
  dispatch_key_metric(in.metric, [&](auto tag) {
    const auto kernel = kernel_for(tag);
    for (int64_t q0 = 0; q0 < in.nq; q0 += queries_per_launch) {
      const int64_t rows = std::min(queries_per_launch, in.nq - q0);
      const unsigned blocks_y = static_cast<unsigned>((rows + grid.queries_per_block - 1) / grid.queries_per_block);
      kernel<<<dim3(blocks_x, blocks_y), grid.block, 0, stream>>>(in.queries + q0 * in.query_stride, in.query_stride,
                                                                   rows, base, in.base_stride, in.nb, in.dim, in.p,
                                                                   out.keys + q0 * out.stride, out.stride);
      GKNN_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace gknn::detail::cuda
