// rerank.cpp: see rerank.hpp.
#include "core/rerank.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/host_parallel.hpp"

namespace gknn::detail {

double KeyErrorBound::query_bound(double query_norm, double max_base_norm) const {
  return key_error_bound(input_error, terms, query_norm, max_base_norm);
}

KeyErrorBound rounded_inputs_bound(int mantissa_bits, int64_t terms) {
  return {std::ldexp(1.0, -mantissa_bits), terms};
}

RerankedRow rerank_row(const KeyResult& candidates, int64_t row, const double* exact, int64_t rows, int64_t k,
                       double eps) {
  RerankedRow out;
  const int64_t kc = candidates.k;
  double last_computed = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < kc; ++j) {
    const int64_t index = candidates.index(row, j);
    if (index < 0) continue;
    out.top.push_back({exact[row * kc + j], index});
    last_computed = std::max(last_computed, static_cast<double>(candidates.distance(row, j)));
  }
  const size_t keep = std::min<size_t>(static_cast<size_t>(k), out.top.size());
  std::partial_sort(out.top.begin(), out.top.begin() + static_cast<std::ptrdiff_t>(keep), out.top.end());
  out.top.resize(keep);
  const bool every_row = kc >= rows;  // nothing outside the candidates
  // The k-th exact key must lie strictly below what any row outside the candidates can have; a key that
  // overflowed (inf) or a bound that did bounds nothing.
  const double outside = last_computed - eps;
  out.certified = every_row || (static_cast<int64_t>(keep) == k && std::isfinite(last_computed) &&
                                std::isfinite(eps) && outside > out.top.back().first);
  return out;
}

int64_t first_candidate_count(int64_t k, int64_t n, const KeyErrorBound& bound) {
  const bool coarse = bound.input_error >= std::ldexp(1.0, -12);  // TF32-rounded inputs (bf16, fp16 alike)
  return std::min(n, coarse ? 2 * k + 64 : k + std::max<int64_t>(16, k / 4));
}

std::vector<int64_t> rerank_rows(const KeyResult& candidates, const std::vector<int64_t>& query_of,
                                 const std::vector<double>& exact, int64_t rows, int64_t k,
                                 const std::vector<double>& eps, KeyResult& out, int threads, double* exact_out) {
  std::vector<unsigned char> certified(query_of.size(), 0);
  // A short loop after the shards (host_parallel.hpp: why not an OpenMP team).
  host_for(static_cast<int64_t>(query_of.size()), candidates.k, int64_t(1) << 13, threads, [&](int64_t i) {
    const int64_t query = query_of[size_t(i)];
    const RerankedRow r = rerank_row(candidates, i, exact.data(), rows, k, eps[size_t(query)]);
    if (!r.certified) return;
    certified[size_t(i)] = 1;
    for (int64_t j = 0; j < k; ++j) {
      const bool held = j < static_cast<int64_t>(r.top.size());
      out.distances[size_t(query * k + j)] =
          held ? static_cast<float>(r.top[size_t(j)].first) : std::numeric_limits<float>::infinity();
      out.indices[size_t(query * k + j)] = held ? r.top[size_t(j)].second : -1;
      if (exact_out) exact_out[query * k + j] = held ? r.top[size_t(j)].first : std::numeric_limits<double>::infinity();
    }
  });
  std::vector<int64_t> retry;
  for (size_t i = 0; i < query_of.size(); ++i)
    if (!certified[i]) retry.push_back(query_of[i]);
  return retry;
}

}  // namespace gknn::detail
