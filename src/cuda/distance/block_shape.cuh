// block_shape.cuh: the block layout shared by the per-component kernels (shared_reduce, atomic), after the
// report: components of a vector along x, several vectors along y, kThreads threads per block in total.
#pragma once

#include <cstdint>

#include "cuda/distance/query_launch.cuh"

namespace gknn::detail::cuda {

struct ComponentBlock {
  static constexpr int kThreads = 256;
  int x;  ///< threads per vector: a power of two, at most 128; each strides over the components when dim > x
  int y;  ///< vectors per block (kThreads / x)
};

/// x = the smallest power of two >= dim, capped at 128 (so at least two vectors share a block).
inline ComponentBlock component_block(int64_t dim) {
  int x = 1;
  while (x < dim && x < 128) x *= 2;
  return {x, ComponentBlock::kThreads / x};
}

/// The launch of a per-component kernel: one query per grid row, one block of shape.y base rows per grid column.
inline QueryGrid component_grid(int64_t dim) {
  const ComponentBlock shape = component_block(dim);
  return {dim3(shape.x, shape.y), shape.y, 1};
}

}  // namespace gknn::detail::cuda
