// direct.cpp: float32 direct sums for every key metric, written so that GCC auto-vectorises them.
//
// A float sum cannot be vectorised along the dimension without reassociating it (and -ffast-math is off),
// so the kernel vectorises ACROSS base rows instead: a tile is packed into panels of kPanel rows stored
// dimension-major (panel[j * kPanel + r]), and kQueries queries update kQueries x kPanel accumulators per
// dimension: one vector load of the panel serves kQueries queries. Each key is still summed in dimension
// order 0..d-1, exactly like a scalar loop, so results do not depend on the blocking.
#include <algorithm>
#include <cmath>

#include "cpu/distance/tile_kernel.hpp"
#include "gknn/error.hpp"

namespace gknn::detail::cpu {
namespace {

constexpr int kPanel = 16;   // base rows per panel: one 512-bit (or two 256-bit) vectors of keys
constexpr int kQueries = 4;  // queries per register block: 4 x 16 accumulators fit the vector registers

// a * b + c, rounded the same way in every instantiation: GCC contracts a*b+c into an FMA wherever it
// likes in C++ (-ffp-contract=fast), which made the 4-query and 1-query blocks round differently. With FMA
// hardware the fused form is requested explicitly; without it there is nothing to contract.
inline float multiply_add(float a, float b, float c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// Per-metric accumulation; finish() turns the accumulator into the key (keys.hpp).
struct SquaredL2Op {
  float operator()(float acc, float q, float x) const {
    const float d = q - x;
    return multiply_add(d, d, acc);
  }
  float finish(float acc) const { return acc; }
};
struct InnerProductOp {
  float operator()(float acc, float q, float x) const { return multiply_add(q, x, acc); }
  float finish(float acc) const { return -acc; }
};
struct L1Op {
  float operator()(float acc, float q, float x) const { return acc + std::fabs(q - x); }
  float finish(float acc) const { return acc; }
};
struct LinfOp {
  float operator()(float acc, float q, float x) const { return std::max(acc, std::fabs(q - x)); }
  float finish(float acc) const { return acc; }
};
struct LpOp {
  float p;
  float operator()(float acc, float q, float x) const { return acc + std::pow(std::fabs(q - x), p); }
  float finish(float acc) const { return acc; }
};
/// Lp for a small integer p: |d|^P by multiplications, which vectorise (std::pow does not without
/// -ffast-math, and costs ~50x more). Rounding differs from pow by a few ulp, like any float kernel.
template <int P>
struct IntegerLpOp {
  float operator()(float acc, float q, float x) const {
    const float a = std::fabs(q - x);
    float power = a;
    for (int i = 1; i < P; ++i) power *= a;
    return acc + power;
  }
  float finish(float acc) const { return acc; }
};

/// Rows [r0, r0 + nr) of base into panels; rows past the end are zero (their keys are never read).
void pack_panels(FloatView base, int64_t r0, int64_t nr, float* packed) {
  const int64_t dim = base.cols, panels = (nr + kPanel - 1) / kPanel;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = packed + p * dim * kPanel;
    for (int r = 0; r < kPanel; ++r) {
      const int64_t row = p * kPanel + r;
      const float* src = row < nr ? base.row(r0 + row) : nullptr;
      for (int64_t j = 0; j < dim; ++j) panel[j * kPanel + r] = src ? src[j] : 0.f;
    }
  }
}

/// Keys of Q queries against one panel; writes the first `valid` columns of each query's key row.
template <int Q, class Op>
void panel_keys(const Op& op, const float* const* q, const float* panel, int64_t dim, int valid, float* keys,
                int64_t ld) {
  float acc[Q][kPanel] = {};
  for (int64_t j = 0; j < dim; ++j) {
    const float* x = panel + j * kPanel;
    for (int i = 0; i < Q; ++i) {
      const float qj = q[i][j];
      for (int r = 0; r < kPanel; ++r) acc[i][r] = op(acc[i][r], qj, x[r]);
    }
  }
  for (int i = 0; i < Q; ++i)
    for (int r = 0; r < valid; ++r) keys[i * ld + r] = op.finish(acc[i][r]);
}

template <class Op>
class DirectKernel final : public TileKernel {
 public:
  DirectKernel(const DistanceInputs& in, Op op, int64_t max_tile_rows)
      : in_(in), op_(op), packed_(static_cast<size_t>(direct_scratch_bytes(max_tile_rows, in.base.cols) / 4)) {}

  void compute(int64_t q0, int64_t nq, int64_t r0, int64_t nr, float* keys, int64_t ld) override {
    const int64_t dim = in_.base.cols;
    pack_panels(in_.base, r0, nr, packed_.data());
    for (int64_t p = 0; p * kPanel < nr; ++p) {
      const float* panel = packed_.data() + p * dim * kPanel;
      const int valid = static_cast<int>(std::min<int64_t>(kPanel, nr - p * kPanel));
      int64_t i = 0;
      for (; i + kQueries <= nq; i += kQueries) block<kQueries>(q0 + i, panel, valid, keys + i * ld + p * kPanel, ld);
      for (; i < nq; ++i) block<1>(q0 + i, panel, valid, keys + i * ld + p * kPanel, ld);
    }
  }

 private:
  template <int Q>
  void block(int64_t first_query, const float* panel, int valid, float* keys, int64_t ld) {
    const float* q[Q];
    for (int i = 0; i < Q; ++i) q[i] = in_.queries.row(first_query + i);
    panel_keys<Q>(op_, q, panel, in_.base.cols, valid, keys, ld);
  }

  DistanceInputs in_;
  Op op_;
  std::vector<float> packed_;
};

template <class Op>
std::unique_ptr<TileKernel> make(const DistanceInputs& in, Op op, int64_t max_tile_rows) {
  return std::make_unique<DirectKernel<Op>>(in, op, max_tile_rows);
}

}  // namespace

int64_t direct_scratch_bytes(int64_t rows, int64_t dim) {
  return (rows + kPanel - 1) / kPanel * kPanel * dim * static_cast<int64_t>(sizeof(float));
}

std::unique_ptr<TileKernel> make_direct_kernel(const DistanceInputs& in, int64_t max_tile_rows) {
  switch (in.key_metric) {
    case Metric::SquaredL2:
      return make(in, SquaredL2Op{}, max_tile_rows);
    case Metric::InnerProduct:
      return make(in, InnerProductOp{}, max_tile_rows);
    case Metric::L1:
      return make(in, L1Op{}, max_tile_rows);
    case Metric::Linf:
      return make(in, LinfOp{}, max_tile_rows);
    case Metric::Lp:
      if (in.p == 1.0) return make(in, IntegerLpOp<1>{}, max_tile_rows);
      if (in.p == 2.0) return make(in, IntegerLpOp<2>{}, max_tile_rows);
      if (in.p == 3.0) return make(in, IntegerLpOp<3>{}, max_tile_rows);
      if (in.p == 4.0) return make(in, IntegerLpOp<4>{}, max_tile_rows);
      return make(in, LpOp{static_cast<float>(in.p)}, max_tile_rows);
    default:
      fail(ErrorCode::Internal, "direct kernel: ", to_string(in.key_metric), " is not a key metric");
  }
}

}  // namespace gknn::detail::cpu
