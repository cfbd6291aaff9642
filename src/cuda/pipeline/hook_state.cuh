// hook_state.cuh: what the pipeline (the dispatch layer) reads of the test hooks of cuda/hooks.hpp and hands on to
// the kernels through their inputs, so that no kernel reads process-wide state.
#pragma once

#include <cstdint>

namespace gknn::detail::cuda {

/// set_texture_limit_override's value (0: none), for DistanceInput::texture_limit.
int64_t texture_limit_override();
/// Adds a search's DistanceContext::fallbacks to texture_fallback_count().
void count_texture_fallbacks(int64_t n);

}  // namespace gknn::detail::cuda
