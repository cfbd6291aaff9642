// epsilon.hpp: the seed's choice of the search distance: the distance at which a point has, on average, k
// neighbours, read off a histogram of sampled distances.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "gknn/types.hpp"

namespace gknn::detail::join {

struct EpsilonChoice {
  double eps_mean = 0;  ///< mean distance between the points of a 0.1% sample
  double eps_min = 0;   ///< middle of the first histogram bin whose average cumulative count reaches k
};

/// How much of the histogram is counted: the seed's whole histogram, or only its first bins (the same answer in
/// a fraction of the time; select_epsilon falls back to the whole one when the first bins do not reach k).
enum class EpsilonHistogram { Truncated, Whole };

/// Histogram of the distances (below eps_mean, n_bins bins) from 500 sampled points to the base; on bases larger
/// than 2^18 points to an evenly spaced subset of about 2^18 points with the counts scaled back (the seed uses
/// every point on the GPU; the subset keeps this to milliseconds on the CPU). Fixed seed: the same eps every run.
/// Degenerate inputs (all sampled points equal) fall back to the bounding-box diagonal, or 1 for a single point.
EpsilonChoice select_epsilon(FloatView base, int64_t k, int n_bins = 10000,
                             EpsilonHistogram histogram = EpsilonHistogram::Truncated);

/// How sampled distances are binned: bin b = floor(sqrt(d2) * bins_per_unit) of the float squared distance d2;
/// pairs with d2 not below limit_sq are skipped. The seed's histogram clamps bins >= `bins` to the last one
/// (clamp_last); a truncated one drops them.
struct Binning {
  float limit_sq;
  float bins_per_unit;
  int bins;
  bool clamp_last;
};

/// counts[b] (b < binning.bins) of the pairs (sampled row q, base row p != q) in bin b: a device's count against
/// every base row (GridSearcher::sample_histogram).
using WholeBaseHistogram = std::function<std::vector<double>(const std::vector<int64_t>& rows, const Binning&)>;

/// select_epsilon with the histogram counted against the whole base by `count` (the seed's rule, on the GPU),
/// not on the CPU against a subset; the same probe and truncation.
EpsilonChoice select_epsilon(FloatView base, int64_t k, const WholeBaseHistogram& count, int n_bins = 10000);

}  // namespace gknn::detail::join
