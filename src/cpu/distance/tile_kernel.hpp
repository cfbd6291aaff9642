// tile_kernel.hpp: the float32 distance kernels of the CPU fast path compute one tile of keys at a time.
//
// A tile is a block of queries times a range of base rows; its keys (core/keys.hpp: always minimised) land in
// a small row-major buffer that stays in cache while the selectors read it. Each thread owns one kernel
// object because kernels keep per-thread scratch (the Direct kernel's packed base panels).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gknn/types.hpp"

namespace gknn::detail::cpu {

/// What every thread's kernel reads; shared, read-only during the search.
struct DistanceInputs {
  FloatView base;
  FloatView queries;
  Metric key_metric;                   ///< SquaredL2, InnerProduct, L1, Linf or Lp
  double p = 2.0;                      ///< exponent of Lp
  const float* base_norms = nullptr;   ///< Gemm with SquaredL2: |x|^2 of every base row
  const float* query_norms = nullptr;  ///< Gemm with SquaredL2: |q|^2 of every query
};

class TileKernel {
 public:
  virtual ~TileKernel() = default;
  /// keys[i * ld + j] = key(query q0 + i, base row r0 + j) for i < nq, j < nr.
  virtual void compute(int64_t q0, int64_t nq, int64_t r0, int64_t nr, float* keys, int64_t ld) = 0;
};

/// Vectorised float32 direct sums, every key metric. Tiles hold at most max_tile_rows base rows.
std::unique_ptr<TileKernel> make_direct_kernel(const DistanceInputs& inputs, int64_t max_tile_rows);
/// Per-thread scratch of the Direct kernel for tiles of `rows` base rows.
int64_t direct_scratch_bytes(int64_t rows, int64_t dim);

/// |q|^2 + |x|^2 - 2 q.x (SquaredL2) or -q.x (InnerProduct) through cblas_sgemm.
std::unique_ptr<TileKernel> make_gemm_kernel(const DistanceInputs& inputs);
/// |row|^2 of every row, accumulated in double and rounded once (exact for small-integer data).
std::vector<float> squared_norms(FloatView m);

/// Makes OpenBLAS single-threaded while it lives: gknn calls SGEMM from its own OpenMP threads (one call per
/// tile), and OpenBLAS's own pool on top of them would oversubscribe the cores. Restores the previous count.
/// The setting is process-wide: concurrent BLAS users elsewhere in the process run single-threaded meanwhile.
/// Guards of concurrent searches (several host threads searching one Index) are counted: the first saves and
/// sets 1, the last restores, so overlapping guards never restore each other's setting.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

}  // namespace gknn::detail::cpu
