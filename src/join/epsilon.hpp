// epsilon.hpp: the seed's choice of the search distance: the distance at which a point has, on average, k
// neighbours, read off a histogram of sampled distances.
#pragma once

#include <cstdint>

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

}  // namespace gknn::detail::join
