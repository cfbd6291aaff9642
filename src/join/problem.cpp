#include "join/problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/finalize.hpp"
#include "cpu/distance/exact.hpp"

namespace gknn::detail::join {

double squared_distance(const float* a, const float* b, int64_t dim) {
  return cpu::exact_key(Metric::SquaredL2, 2.0, a, b, dim);
}

Result without_self(const Result& all, int64_t k) {
  // Not zero-filled: each row's k entries are all written below.
  Result out = allocate_result(all.rows, k);
#pragma omp parallel for schedule(static) if (all.rows >= 4096)
  for (int64_t i = 0; i < all.rows; ++i) {
    int64_t written = 0;
    for (int64_t j = 0; j < all.k && written < k; ++j) {
      if (all.index(i, j) == i) continue;
      out.indices[size_t(i * k + written)] = all.index(i, j);
      out.distances[size_t(i * k + written)] = all.distance(i, j);
      ++written;
    }
    for (; written < k; ++written) {  // only if `all` held fewer than k + 1 entries: padded as a search pads
      out.indices[size_t(i * k + written)] = -1;
      out.distances[size_t(i * k + written)] = std::numeric_limits<float>::infinity();
    }
  }
  return out;
}

void Output::write_row(const Problem& problem, int64_t row, const std::vector<Candidate>& sorted) const {
  wait_ready();  // an atomic load once the result exists (a promise's state: no thread join behind it)
  const int64_t k = problem.k;
  float* distances = result->distances.data() + row * k;
  int64_t* indices = result->indices.data() + row * k;
  const int64_t held = std::min<int64_t>(k, static_cast<int64_t>(sorted.size()));
  for (int64_t j = 0; j < held; ++j) {
    const double d = sorted[size_t(j)].first;
    distances[j] = static_cast<float>(problem.metric == Metric::L2 ? std::sqrt(d) : d);
    indices[j] = sorted[size_t(j)].second;
  }
  for (int64_t j = held; j < k; ++j) {
    distances[j] = std::numeric_limits<float>::infinity();
    indices[j] = -1;
  }
}

void Output::scatter(int64_t k, const int64_t* ids, int64_t count, const float* distances, const int64_t* indices,
                     const unsigned char* ok, std::vector<int64_t>& failed) const {
  wait_ready();
#pragma omp parallel for schedule(static) if (count >= 65536)
  for (int64_t s = 0; s < count; ++s) {
    if (!ok[s]) continue;
    std::copy(distances + s * k, distances + (s + 1) * k, result->distances.data() + ids[s] * k);
    std::copy(indices + s * k, indices + (s + 1) * k, result->indices.data() + ids[s] * k);
  }
  for (int64_t s = 0; s < count; ++s)
    if (!ok[s]) failed.push_back(ids[s]);
}

}  // namespace gknn::detail::join
