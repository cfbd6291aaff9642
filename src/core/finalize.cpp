#include "core/finalize.hpp"

#include <algorithm>
#include <limits>
#include <new>

#include "core/keys.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {

void restore_tie_order(const float* values, int64_t* indices, int64_t count) {
  for (int64_t begin = 0; begin < count;) {
    int64_t end = begin + 1;
    while (end < count && values[end] == values[begin]) ++end;
    std::sort(indices + begin, indices + end);
    begin = end;
  }
}

Result finalize(KeyResult keys, Metric metric, double p, int64_t k) {
  Result out;
  out.rows = keys.rows;
  out.k = k;
  // k > n pads every row, so a huge k is a huge allocation: refuse it by name instead of a bare bad_alloc.
  GKNN_EXPECT(keys.rows == 0 || k <= std::numeric_limits<int64_t>::max() / 12 / keys.rows, ErrorCode::OutOfMemory,
              "a result of ", keys.rows, " x k = ", k, " entries cannot be addressed");
  try {
    out.distances.assign(static_cast<size_t>(keys.rows * k), padding_value(metric));
    out.indices.assign(static_cast<size_t>(keys.rows * k), -1);
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::OutOfMemory, "a result of ", keys.rows, " x k = ", k, " entries (", keys.rows * k * 12,
         " bytes) does not fit in host memory; lower k");
  }
  const int64_t kept = std::min(k, keys.k);
  for (int64_t i = 0; i < keys.rows; ++i) {
    for (int64_t j = 0; j < kept; ++j) {
      const size_t from = static_cast<size_t>(i * keys.k + j), to = static_cast<size_t>(i * k + j);
      out.distances[to] = key_to_value(metric, p, keys.distances[from]);
      out.indices[to] = keys.indices[from];
    }
    restore_tie_order(out.distances.data() + i * k, out.indices.data() + i * k, kept);
  }
  return out;
}

SearchParams key_params(const SearchParams& params, int64_t n) {
  SearchParams kp = params;
  kp.metric = key_metric(params.metric);
  kp.k = std::min(params.k, n);
  return kp;
}

}  // namespace gknn::detail
