// hook_state.cuh: what the pipeline (the dispatch layer) reads of the test hooks of cuda/hooks.hpp and hands on to
// the kernels through their inputs, so that no kernel reads process-wide state.
#pragma once

#include <cstdint>

namespace gknn::detail::cuda {

/// set_texture_limit_override's value (0: none), for DistanceInput::texture_limit.
int64_t texture_limit_override();
/// Adds a search's DistanceContext::fallbacks to texture_fallback_count().
void count_texture_fallbacks(int64_t n);
/// set_operand_cache_enabled's value (true unless a test or benchmark turned it off).
bool operand_cache_enabled();
/// set_fused_split_merge_enabled's value (true unless a test or benchmark turned it off), for FusedTarget.
bool fused_split_merge_enabled();
/// set_staged_certificate_enabled's value (on unless GKNN_STAGED_CERTIFICATE=0 at start), for certify.cu.
bool staged_certificate_enabled();
/// Adds to operand_cache_rows_converted().
void count_operand_rows(int64_t rows);

}  // namespace gknn::detail::cuda
