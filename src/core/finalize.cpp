#include "core/finalize.hpp"

#include <algorithm>

#include "core/keys.hpp"

namespace gknn::detail {

Result finalize(KeyResult keys, Metric metric, double p, int64_t k) {
  Result out;
  out.rows = keys.rows;
  out.k = k;
  out.distances.assign(static_cast<size_t>(keys.rows * k), padding_value(metric));
  out.indices.assign(static_cast<size_t>(keys.rows * k), -1);
  const int64_t kept = std::min(k, keys.k);
  for (int64_t i = 0; i < keys.rows; ++i)
    for (int64_t j = 0; j < kept; ++j) {
      const size_t from = static_cast<size_t>(i * keys.k + j), to = static_cast<size_t>(i * k + j);
      out.distances[to] = key_to_value(metric, p, keys.distances[from]);
      out.indices[to] = keys.indices[from];
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
