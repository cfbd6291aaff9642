// measured_choice.cuh: Auto's distance and selection from the measured plan table (src/plan/plan_table.hpp),
// consulted before the rules of the registries (distance/registry.cu, select/choose.cu).
#pragma once

#include <string>

#include "cuda/distance/distance.cuh"
#include "gknn/types.hpp"

namespace gknn::detail::cuda {

struct MeasuredChoice {
  SearchParams params;  ///< the key params with Auto replaced by the table's choice where a row applies
  std::string distance_reason, select_reason;  ///< "measured: ..." for what the table chose, else empty
};

/// For a search of nq queries against nb rows on `device`: where the distance or the selection is Auto and the
/// table holds a row for this device, metric class and data kind near enough (plan::nearest) whose algorithms this
/// build can run on these data and k, and whose other half is the request's own where that is forced
/// (plan::pairs_with), that row's choice; everything else stays as requested (Auto then falls to
/// the rules). Both the search (run_search) and explain_search call it; `reasons` false (the search) leaves the
/// reasons empty (a string made per search for nothing).
MeasuredChoice measured_choice(const SearchParams& key_params, int64_t nq, int64_t nb, const DataFacts& facts,
                               int device, bool reasons = true);

}  // namespace gknn::detail::cuda
