#include "join/epsilon.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "gknn/error.hpp"
#include "join/grid.hpp"
#include "join/problem.hpp"
#include "join/trace.hpp"

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

/// Per-row partial sums added in row order: an OpenMP reduction adds in thread order, which made eps_mean, and so
/// the histogram's bin width, differ in its last bits from run to run.
double mean_pairwise_distance(FloatView base, const std::vector<int64_t>& rows) {
  const int64_t m = static_cast<int64_t>(rows.size());
  std::vector<double> row_sums(static_cast<size_t>(m), 0.0);
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t a = 0; a < m; ++a) {
    double sum = 0;
    for (int64_t b = a + 1; b < m; ++b)
      sum += std::sqrt(squared_distance(base.row(rows[size_t(a)]), base.row(rows[size_t(b)]), base.cols));
    row_sums[size_t(a)] = sum;
  }
  double sum = 0;
  for (double s : row_sums) sum += s;
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

/// Every `step`-th base row, copied together: the histogram reads them once per sampled query, and in place they
/// are a cache line apart each (10^7 points: 2^18 scattered rows, 500 times over, was most of the join's epsilon).
struct Subset {
  std::vector<float> values;
  int64_t rows = 0;
  int64_t step = 1;
  FloatView view(int64_t cols) const { return FloatView{values.data(), rows, cols, 0}; }
};

Subset every_step_th_row(FloatView base, int64_t step) {
  Subset s;
  s.step = step;
  s.rows = (base.rows + step - 1) / step;
  s.values.resize(static_cast<size_t>(s.rows * base.cols));
#pragma omp parallel for schedule(static) if (s.rows >= 65536)
  for (int64_t r = 0; r < s.rows; ++r)
    std::copy_n(base.row(r * step), base.cols, s.values.data() + r * base.cols);
  return s;
}

/// Counts of the binned distances from the sampled queries (rows of `base`) to the subset's rows, a query's own
/// row excluded.
std::vector<double> distance_histogram(FloatView base, const std::vector<int64_t>& queries, const Subset& subset,
                                       const Binning& binning) {
  const int n_bins = binning.bins;
  const FloatView rows = subset.view(base.cols);
  std::vector<double> total(static_cast<size_t>(n_bins), 0.0);
#pragma omp parallel
  {
    std::vector<double> local(static_cast<size_t>(n_bins), 0.0);
#pragma omp for schedule(dynamic, 1)
    for (int64_t s = 0; s < static_cast<int64_t>(queries.size()); ++s) {
      const int64_t q = queries[size_t(s)];
      for (int64_t r = 0; r < rows.rows; ++r) {
        const float d2 = squared_distance_f(base.row(q), rows.row(r), base.cols);
        if (r * subset.step == q || !(d2 < binning.limit_sq)) continue;
        const int64_t bin = static_cast<int64_t>(std::sqrt(d2) * binning.bins_per_unit);
        if (bin < n_bins) local[size_t(bin)] += 1;
        else if (binning.clamp_last) local[size_t(n_bins - 1)] += 1;
      }
    }
#pragma omp critical
    for (int b = 0; b < n_bins; ++b) total[size_t(b)] += local[size_t(b)];
  }
  return total;
}

/// The first bin whose cumulative count (times `scale`) reaches `target`; the last bin when none does, -1 when
/// there is none (the caller then keeps eps_mean).
int first_bin_reaching(const std::vector<double>& counts, double scale, double target) {
  double cumulative = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    cumulative += counts[b] * scale;
    if (cumulative >= target) return static_cast<int>(b);
  }
  return -1;
}

/// Counts of the sampled rows' distances: against the whole base (scale 1) or an every-step-th subset of it.
struct HistogramSource {
  std::function<std::vector<double>(const std::vector<int64_t>& queries, const Binning&)> count;
  int64_t step = 1;  ///< each counted pair stands for this many
};

/// eps_mean, then eps_min off the histogram of the source made by `make_source` (only when the sample is not
/// degenerate: the CPU's subset is copied then).
EpsilonChoice choose(FloatView base, int64_t k, int n_bins, EpsilonHistogram histogram,
                     const std::function<HistogramSource()>& make_source) {
  const int64_t n = base.rows;
  EpsilonChoice choice;
  const int64_t mean_sample = std::clamp<int64_t>((n + 999) / 1000, std::min<int64_t>(n, 2), 4096);
  choice.eps_mean = mean_pairwise_distance(base, sample_rows(n, mean_sample, 0x5eed0001));
  trace_mark("epsilon: eps_mean of the sample");
  if (!(choice.eps_mean > 0)) choice.eps_mean = diagonal(base);
  if (!(choice.eps_mean > 0)) {  // every point equal: any cell side holds them all
    choice.eps_min = choice.eps_mean = 1.0;
    return choice;
  }
  const std::vector<int64_t> queries = sample_rows(n, std::min(n, kHistogramQueries), 0x5eed0002);
  const HistogramSource source = make_source();
  const int64_t step = source.step;
  // Average neighbours per sampled point, scaled from the counted rows to the whole base.
  const double scale = double(step) / double(queries.size());
  const double width = choice.eps_mean / n_bins;
  const Binning seed{static_cast<float>(choice.eps_mean * choice.eps_mean), static_cast<float>(n_bins / choice.eps_mean),
                     n_bins, true};
  // The seed's histogram reaches eps_mean, about the mean distance, so half of all sampled pairs land in it, while
  // k neighbours are found in its first bins (10^7 uniform 3-D points, k = 16: bin 117 of 10 000). A probe on a
  // tenth of the sampled points finds the bin where their count reaches 4k; the full sample is then binned only
  // that far (same bin edges; the limit one bin beyond, so float rounding cannot cut a pair off a kept bin), and
  // its counts there are the seed's histogram's. Only when they do not reach k does the whole histogram decide.
  // The probe's counts in the kept bins are those the truncated pass would find for its tenth (same squared
  // distances, same bin of each; both limits lie a bin or more beyond them), so that pass bins the other nine
  // tenths and adds them: the same histogram, a tenth less work.
  const size_t probed = std::max<size_t>(1, queries.size() / 10);
  const std::vector<int64_t> tenth(queries.begin(), queries.begin() + static_cast<std::ptrdiff_t>(probed));
  std::vector<double> probe_counts;
  if (histogram != EpsilonHistogram::Whole) probe_counts = source.count(tenth, seed);
  trace_mark("epsilon: the probe's histogram");
  const int probe = histogram == EpsilonHistogram::Whole
                        ? -1
                        : first_bin_reaching(probe_counts, double(step) / double(tenth.size()), 4.0 * double(k));
  int bin = -1;
  if (histogram == EpsilonHistogram::Truncated && probe >= 0 && probe + 2 < n_bins) {
    const double limit = width * (probe + 2);
    const Binning truncated{static_cast<float>(limit * limit), seed.bins_per_unit, probe + 1, false};
    const std::vector<int64_t> rest(queries.begin() + static_cast<std::ptrdiff_t>(probed), queries.end());
    std::vector<double> counts = source.count(rest, truncated);
    for (int b = 0; b <= probe; ++b) counts[size_t(b)] += probe_counts[size_t(b)];
    bin = first_bin_reaching(counts, scale, double(k));
  }
  if (bin < 0) bin = first_bin_reaching(source.count(queries, seed), scale, double(k));
  choice.eps_min = bin < 0 ? choice.eps_mean : (bin + 0.5) * width;
  return choice;
}

}  // namespace

EpsilonChoice select_epsilon(FloatView base, int64_t k, int n_bins, EpsilonHistogram histogram) {
  return choose(base, k, n_bins, histogram, [&] {
    const int64_t step = std::max<int64_t>(1, base.rows / kHistogramBase);
    auto subset = std::make_shared<const Subset>(every_step_th_row(base, step));
    return HistogramSource{[base, subset](const std::vector<int64_t>& queries, const Binning& binning) {
                             return distance_histogram(base, queries, *subset, binning);
                           },
                           step};
  });
}

EpsilonChoice select_epsilon(FloatView base, int64_t k, const WholeBaseHistogram& count, int n_bins) {
  return choose(base, k, n_bins, EpsilonHistogram::Truncated, [&] {
    return HistogramSource{[&](const std::vector<int64_t>& rows, const Binning& binning) {
                             std::vector<double> counts = count(rows, binning);
                             GKNN_EXPECT(counts.size() == size_t(binning.bins), ErrorCode::Internal,
                                         "join epsilon: a histogram of ", counts.size(), " bins, not ", binning.bins);
                             return counts;
                           },
                           1};
  });
}

}  // namespace gknn::detail::join
