// algorithms.hpp: which algorithms the CPU backend has, and how it resolves Auto.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gknn/search.hpp"
#include "gknn/types.hpp"

namespace gknn::detail::cpu {

/// Largest k for which Auto selects with the heap; above it, Quickselect (measured, see docs in
/// algorithms.cpp and bench/results/cpu_vs_faiss.md).
inline constexpr int64_t kHeapMaxAutoK = 256;

/// Resolves Auto and rejects (ErrorCode::Unsupported) algorithms the CPU backend lacks for `key_metric`; `why`, when
/// given, gets the reason of the choice (explain_search).
DistanceAlgorithm resolve_distance(DistanceAlgorithm requested, Metric key_metric, std::string* why = nullptr);
SelectAlgorithm resolve_select(SelectAlgorithm requested, int64_t k, std::string* why = nullptr);

}  // namespace gknn::detail::cpu
