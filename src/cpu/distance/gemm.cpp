// gemm.cpp: keys from one SGEMM per tile (Garcia et al.'s knn_cublas decomposition, on the CPU).
//
// |q - x|^2 = |q|^2 + |x|^2 - 2 q.x: the norms are computed once per search, the cross term by SGEMM with
// alpha = -2 (exact scaling), so on small-integer data every term and sum is exact and the keys equal the
// direct sums bit for bit. Rounding can make the float expression slightly negative: clamped at 0.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "cpu/distance/tile_kernel.hpp"
#include "gknn/error.hpp"

namespace gknn::detail::cpu {
namespace {

// A key that overflowed to NaN (inf - inf from huge coordinates) would break the selectors' order: it
// becomes +inf, the worst key. Written as selects so that the epilogue loops vectorise.
inline float sanitize(float key) { return key == key ? key : INFINITY; }
inline float clamp_squared(float key) { return key >= 0.f ? key : (key < 0.f ? 0.f : INFINITY); }

class GemmKernel final : public TileKernel {
 public:
  explicit GemmKernel(const DistanceInputs& in) : in_(in) {}

  void compute(int64_t q0, int64_t nq, int64_t r0, int64_t nr, float* keys, int64_t ld) override {
    const bool l2 = in_.key_metric == Metric::SquaredL2;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(nq), static_cast<int>(nr),
                static_cast<int>(in_.base.cols), l2 ? -2.f : -1.f, in_.queries.row(q0),
                static_cast<int>(in_.queries.row_stride()), in_.base.row(r0), static_cast<int>(in_.base.row_stride()),
                0.f, keys, static_cast<int>(ld));
    for (int64_t i = 0; i < nq; ++i) {
      float* row = keys + i * ld;
      if (l2) {
        const float qn = in_.query_norms[q0 + i];
        const float* xn = in_.base_norms + r0;
        for (int64_t j = 0; j < nr; ++j) {
          row[j] = clamp_squared((qn + xn[j]) + row[j]);
        }
      } else {
        for (int64_t j = 0; j < nr; ++j) row[j] = sanitize(row[j]);
      }
    }
  }

 private:
  DistanceInputs in_;
};

}  // namespace

std::unique_ptr<TileKernel> make_gemm_kernel(const DistanceInputs& inputs) {
  // CBLAS takes int sizes; tiles are small, but dimensions and strides come from the user.
  const int64_t largest = std::max({inputs.base.cols, inputs.base.row_stride(), inputs.queries.row_stride()});
  GKNN_EXPECT(largest <= std::numeric_limits<int>::max(), ErrorCode::Unsupported,
              "distance algorithm gemm: dimension or ", "row stride ", largest,
              " exceeds the int range of CBLAS; use direct");
  return std::make_unique<GemmKernel>(inputs);
}

std::vector<float> squared_norms(FloatView m) {
  std::vector<float> out(static_cast<size_t>(m.rows));
  for (int64_t i = 0; i < m.rows; ++i) {
    const float* row = m.row(i);
    double sum = 0;
    for (int64_t j = 0; j < m.cols; ++j) sum += static_cast<double>(row[j]) * row[j];
    out[static_cast<size_t>(i)] = static_cast<float>(sum);
  }
  return out;
}

namespace {
struct BlasThreadsState {
  std::mutex mutex;
  int guards = 0;  ///< live SingleThreadedBlas objects
  int saved = 1;   ///< OpenBLAS's thread count before the first of them
};
BlasThreadsState& blas_threads_state() {
  static BlasThreadsState state;
  return state;
}
}  // namespace

SingleThreadedBlas::SingleThreadedBlas() {
  BlasThreadsState& s = blas_threads_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.guards++ == 0) {
    s.saved = openblas_get_num_threads();
    openblas_set_num_threads(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  BlasThreadsState& s = blas_threads_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (--s.guards == 0) openblas_set_num_threads(s.saved);
}

}  // namespace gknn::detail::cpu
