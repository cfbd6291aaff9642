#include "join/epsilon.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "join/grid.hpp"
#include "join/problem.hpp"

namespace gknn::detail::join {
namespace {

constexpr int64_t kHistogramQueries = 500;
constexpr int64_t kHistogramBase = int64_t(1) << 18;

std::vector<int64_t> sample_rows(int64_t n, int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t& r : rows) r = pick(rng);
  return rows;
}

double mean_pairwise_distance(FloatView base, const std::vector<int64_t>& rows) {
  const int64_t m = static_cast<int64_t>(rows.size());
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(dynamic, 16)
  for (int64_t a = 0; a < m; ++a)
    for (int64_t b = a + 1; b < m; ++b)
      sum += std::sqrt(squared_distance(base.row(rows[size_t(a)]), base.row(rows[size_t(b)]), base.cols));
  return m < 2 ? 0.0 : sum / (double(m) * double(m - 1) / 2);
}

double diagonal(FloatView base) {
  const BoundingBox box = bounding_box(base);
  double sq = 0;
  for (int64_t j = 0; j < base.cols; ++j) sq += (box.hi[j] - box.lo[j]) * (box.hi[j] - box.lo[j]);
  return std::sqrt(sq);
}

/// Squared distance in float: epsilon is a starting point for the grid, never part of an answer, so float
/// (vectorisable) arithmetic is precise enough.
float squared_distance_f(const float* a, const float* b, int64_t dim) {
  float acc = 0;
  for (int64_t j = 0; j < dim; ++j) acc += (a[j] - b[j]) * (a[j] - b[j]);
  return acc;
}

/// Counts of the distances in [b * width, (b+1) * width) from the sampled queries to every `step`-th base row.
std::vector<double> distance_histogram(FloatView base, const std::vector<int64_t>& queries, int64_t step,
                                       double eps_mean, int n_bins) {
  const float limit_sq = static_cast<float>(eps_mean * eps_mean);
  const float bins_per_unit = static_cast<float>(n_bins / eps_mean);
  std::vector<double> total(static_cast<size_t>(n_bins), 0.0);
#pragma omp parallel
  {
    std::vector<double> local(static_cast<size_t>(n_bins), 0.0);
#pragma omp for schedule(dynamic, 1)
    for (int64_t s = 0; s < static_cast<int64_t>(queries.size()); ++s) {
      const int64_t q = queries[size_t(s)];
      for (int64_t i = 0; i < base.rows; i += step) {
        const float d2 = squared_distance_f(base.row(q), base.row(i), base.cols);
        if (i == q || !(d2 < limit_sq)) continue;
        const int64_t bin = static_cast<int64_t>(std::sqrt(d2) * bins_per_unit);
        local[size_t(std::min<int64_t>(n_bins - 1, bin))] += 1;
      }
    }
#pragma omp critical
    for (int b = 0; b < n_bins; ++b) total[size_t(b)] += local[size_t(b)];
  }
  return total;
}

}  // namespace

EpsilonChoice select_epsilon(FloatView base, int64_t k, int n_bins) {
  const int64_t n = base.rows;
  EpsilonChoice choice;
  const int64_t mean_sample = std::clamp<int64_t>((n + 999) / 1000, std::min<int64_t>(n, 2), 4096);
  choice.eps_mean = mean_pairwise_distance(base, sample_rows(n, mean_sample, 0x5eed0001));
  if (!(choice.eps_mean > 0)) choice.eps_mean = diagonal(base);
  if (!(choice.eps_mean > 0)) {  // every point equal: any cell side holds them all
    choice.eps_min = choice.eps_mean = 1.0;
    return choice;
  }
  const std::vector<int64_t> queries = sample_rows(n, std::min(n, kHistogramQueries), 0x5eed0002);
  const int64_t step = std::max<int64_t>(1, n / kHistogramBase);
  const std::vector<double> counts = distance_histogram(base, queries, step, choice.eps_mean, n_bins);
  // Average neighbours per sampled point, scaled from the every-step-th subset to the whole base.
  const double scale = double(step) / double(queries.size());
  double cumulative = 0;
  choice.eps_min = choice.eps_mean;
  for (int b = 0; b < n_bins; ++b) {
    cumulative += counts[size_t(b)] * scale;
    if (cumulative >= double(k)) {
      choice.eps_min = (b + 0.5) * (choice.eps_mean / n_bins);
      break;
    }
  }
  return choice;
}

}  // namespace gknn::detail::join
