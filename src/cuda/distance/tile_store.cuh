// tile_store.cuh: the output step of the register-tiled distance kernels (lp_gemm, lp_bytes): a block computes a
// 128 x 128 tile of keys, each of its 256 threads (tx, ty) = (tid % 16, tid / 16) holding 8 x 8 of them for query
// rows {4ty .. 4ty+3, 64+4ty .. 64+4ty+3} and base rows {4tx .. 4tx+3, 64+4tx .. 64+4tx+3} of the tile.
#pragma once

#include <cstdint>

namespace gknn::detail::cuda {

/// Writes a thread's 8 x 8 keys, key(acc[i][j]) for its query row i and base row j (0..7 each, in the order above).
/// A thread's 4 consecutive keys of a row go out as one float4 where the output rows allow it (a warp then writes
/// 256 contiguous bytes per row), else one by one; rows and columns past nq / nb are skipped.
template <class Acc, class Key>
__device__ __forceinline__ void store_tile_keys(const Acc (&acc)[8][8], Key key, float* out,
                                                int64_t out_stride, int64_t nq, int64_t nb, int64_t q_first,
                                                int64_t b_first, int tx, int ty) {
  const bool vector_store = out_stride % 4 == 0 && (reinterpret_cast<uintptr_t>(out) & 15) == 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t qi = q_first + (i < 4 ? 4 * ty + i : 64 + 4 * ty + (i - 4));
    if (qi >= nq) continue;
    float* row = out + qi * out_stride;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t bj = b_first + 64 * half + 4 * tx;
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = key(acc[i][4 * half + j]);
      if (vector_store && bj + 3 < nb) {
        *reinterpret_cast<float4*>(row + bj) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (bj + j < nb) row[bj + j] = v[j];
      }
    }
  }
}

}  // namespace gknn::detail::cuda
