// finalize.hpp: turning a backend's key result into the user's result (values, padding for k > n).
#pragma once

#include "core/backend.hpp"

namespace gknn::detail {

/// keys: q x k_eff ascending keys; returns q x k values in the user's metric, padded with -1 / worst value.
Result finalize(KeyResult keys, Metric metric, double p, int64_t k);

/// SearchParams as a backend sees them (key metric, k clipped to n).
SearchParams key_params(const SearchParams& params, int64_t n);

}  // namespace gknn::detail
