// search.hpp: the CPU backend's search with optional precomputed base norms (the resident store's).
#pragma once

#include "core/backend.hpp"

namespace gknn::detail::cpu {

/// cpu::search, reusing |x|^2 of every base row when the caller has them (null: computed when needed).
KeyResult search_with_norms(FloatView base, const float* base_norms, FloatView queries, const SearchParams& key_params);

}  // namespace gknn::detail::cpu
