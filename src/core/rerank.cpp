// rerank.cpp: see rerank.hpp.
#include "core/rerank.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/distance/exact.hpp"
#include "cpu/parallel.hpp"

namespace gknn::detail {

double LowPrecisionBound::query_bound(double query_norm, double max_base_norm) const {
  const double ur = std::ldexp(1.0, -(mantissa_bits + 1));
  const double u = std::ldexp(1.0, -23);  // float32 accumulation that may truncate
  const double du = double(dim) * u;
  const double gamma = du / (1.0 - du);
  const double q = query_norm, x = max_base_norm;
  const double eps = (gamma + 2 * u) * (x * x + q * q) + 2 * (2 * ur + ur * ur + 2 * gamma + 2 * u) * q * x;
  return 2 * eps;  // safety factor: the bound's own rounding and the norms' float32 sums
}

RerankedRow rerank_row(const KeyResult& candidates, int64_t candidate_row, FloatView base, FloatView queries,
                       int64_t query, int64_t k, double eps) {
  RerankedRow out;
  const int64_t kc = candidates.k;
  const float* q = queries.row(query);
  double last_computed = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < kc; ++j) {
    const int64_t index = candidates.index(candidate_row, j);
    if (index < 0) continue;
    out.top.push_back({cpu::exact_key(Metric::SquaredL2, 2.0, q, base.row(index), base.cols), index});
    last_computed = std::max(last_computed, static_cast<double>(candidates.distance(candidate_row, j)));
  }
  const size_t keep = std::min<size_t>(static_cast<size_t>(k), out.top.size());
  std::partial_sort(out.top.begin(), out.top.begin() + static_cast<std::ptrdiff_t>(keep), out.top.end());
  out.top.resize(keep);
  const bool every_row = kc >= base.rows;  // nothing outside the candidates
  // The k-th exact distance must lie strictly below what any row outside the candidates can have.
  out.certified = every_row || (static_cast<int64_t>(keep) == k && last_computed - eps > out.top.back().first);
  return out;
}

int64_t first_candidate_count(int64_t k, int64_t n) { return std::min(n, k + std::max<int64_t>(16, k / 4)); }

std::vector<int64_t> rerank_rows(const KeyResult& candidates, const std::vector<int64_t>& rows, FloatView base,
                                 FloatView queries, int64_t k, const std::vector<double>& eps, KeyResult& out,
                                 int threads) {
  std::vector<unsigned char> certified(rows.size(), 0);
  cpu::parallel_for(threads, static_cast<int64_t>(rows.size()), [&](int64_t i) {
    const int64_t query = rows[size_t(i)];
    const RerankedRow r = rerank_row(candidates, i, base, queries, query, k, eps[size_t(query)]);
    if (!r.certified) return;
    certified[size_t(i)] = 1;
    for (int64_t j = 0; j < k; ++j) {
      const bool held = j < static_cast<int64_t>(r.top.size());
      out.distances[size_t(query * k + j)] =
          held ? static_cast<float>(r.top[size_t(j)].first) : std::numeric_limits<float>::infinity();
      out.indices[size_t(query * k + j)] = held ? r.top[size_t(j)].second : -1;
    }
  });
  std::vector<int64_t> retry;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!certified[i]) retry.push_back(rows[i]);
  return retry;
}

}  // namespace gknn::detail
