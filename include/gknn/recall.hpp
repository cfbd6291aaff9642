// gknn/recall.hpp: recall@k, by the two definitions in use.
#pragma once

#include <cstdint>

#include "gknn/io.hpp"
#include "gknn/types.hpp"

namespace gknn {

/// Id overlap (FAISS/TEXMEX style). For each query q let R = the distinct ids >= 0 among result row q's
/// first k indices and T = the distinct ids >= 0 among truth row q's first k entries; recall is the mean over
/// queries of |R ∩ T| / k. Padding (-1) never counts, so a query with fewer than k true neighbours cannot
/// reach 1. Ties at the k-th distance count against a result that picked a different but equally near id
/// (use recall_distance to forgive them). truth may have more columns than k; only its first k are used.
/// Throws InvalidArgument when k < 1, k > result.k, result has no rows, or truth's rows differ from the
/// result's or have fewer than k columns.
double recall_ids(const Result& result, const HostMatrix<int64_t>& truth, int64_t k);

/// Distance threshold (ann-benchmarks style). For each query q let t = truth_distances[q][k-1] (the true
/// k-th distance); a returned neighbour j < k with index >= 0 is a hit when its distance <= t + epsilon
/// (similarity = true: similarity >= t - epsilon); recall is the mean over queries of hits / k. Any of
/// several neighbours tied at the k-th distance therefore counts, and epsilon (absolute, in the metric's
/// own units: pass the same metric as the truth, e.g. L2 vs squared L2) absorbs float rounding.
/// Throws InvalidArgument under the same shape conditions as recall_ids.
double recall_distance(const Result& result, const HostMatrix<float>& truth_distances, int64_t k,
                       double epsilon = 1e-3, bool similarity = false);

/// The exact value of `metric` between vectors a and b of `dim` floats: computed in float64 (the library's oracle,
/// the Reference algorithm's arithmetic), rounded once to float. Cosine normalises both (a zero vector has
/// similarity 0 to everything); p is Lp's exponent. For ground-truth checks such as recall_distance's truth.
float exact_distance(const float* a, const float* b, int64_t dim, Metric metric, double p = 2.0);

}  // namespace gknn
