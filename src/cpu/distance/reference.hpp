// reference.hpp: DistanceAlgorithm::Reference, the float64 oracle of the CPU backend.
#pragma once

#include "core/backend.hpp"

namespace gknn::detail::cpu {

/// Every key of a query in double precision (exact_key), all n sorted in the total order, the first k kept.
/// Double is used throughout, so the requested selection algorithm does not apply. Keys are reported as
/// float; the k kept are re-sorted by (float key, index) so that the float output is itself in total order
/// even where two doubles round to the same float.
KeyResult reference_search(FloatView base, FloatView queries, const SearchParams& key_params, int threads);

}  // namespace gknn::detail::cpu
