// select_k.cpp: cpu::select_k: the same selectors as search, one row of keys at a time, OpenMP over rows.
#include <algorithm>

#include "core/backend.hpp"
#include "cpu/algorithms.hpp"
#include "cpu/parallel.hpp"
#include "cpu/select/selectors.hpp"

namespace gknn::detail::cpu {
namespace {

constexpr int64_t kRowsPerUnitMax = 64;  // small units balance rows of a skewed cost (descending rows)

template <class Selector>
void select_rows(FloatView keys, const int64_t* labels, int64_t k, int threads, Result& out) {
  const int64_t rows = keys.rows, stride = keys.row_stride();
  const int64_t per_unit = std::clamp<int64_t>(rows / (int64_t(threads) * 8), 1, kRowsPerUnitMax);
  parallel_for(threads, (rows + per_unit - 1) / per_unit, [&](int64_t unit) {
    Selector selector(k, keys.cols);
    for (int64_t r = unit * per_unit; r < std::min(rows, (unit + 1) * per_unit); ++r) {
      selector.reset();
      if (labels)
        selector.push(keys.row(r), keys.cols, LabelIndex{labels + r * stride});
      else
        selector.push(keys.row(r), keys.cols, ConsecutiveIndex{0});
      const int64_t kept = selector.finish(out.distances.data() + r * k, out.indices.data() + r * k);
      GKNN_EXPECT(kept == k, ErrorCode::Internal, "cpu select_k: row ", r, " kept ", kept, " of ", k);
    }
  });
}

}  // namespace

Result select_k(FloatView keys, const int64_t* labels, int64_t k, const SelectParams& params) {
  GKNN_EXPECT(params.threads >= 0, ErrorCode::InvalidArgument, "select_k: threads must be >= 0 (got ", params.threads,
              ")");
  const SelectAlgorithm algorithm = resolve_select(params.algorithm, k);
  Result out{keys.rows, k, std::vector<float>(size_t(keys.rows * k)), std::vector<int64_t>(size_t(keys.rows * k))};
  if (keys.rows == 0) return out;
  with_selector(algorithm, [&](auto tag) {
    select_rows<typename decltype(tag)::type>(keys, labels, k, resolve_threads(params.threads), out);
  });
  return out;
}

}  // namespace gknn::detail::cpu
