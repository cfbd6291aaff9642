// gknn/recall.hpp: recall@k, by the two definitions in use.
#pragma once

#include <cstdint>

#include "gknn/io.hpp"
#include "gknn/types.hpp"

namespace gknn {

/// Id overlap (FAISS/TEXMEX style): mean over queries of |result[:k] ∩ truth[:k]| / k.
/// truth may have more columns than k; only its first k are used. Throws InvalidArgument on shape mismatch.
double recall_ids(const Result& result, const HostMatrix<int64_t>& truth, int64_t k);

/// ann-benchmarks style: mean over queries of (#result distances <= truth_distance[k-1] + epsilon) / k.
/// For similarity metrics pass negated values, or use `similarity = true` (>= truth[k-1] - epsilon).
double recall_distance(const Result& result, const HostMatrix<float>& truth_distances, int64_t k,
                       double epsilon = 1e-3, bool similarity = false);

}  // namespace gknn
