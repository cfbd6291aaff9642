// hook_state.cu: the texture, operand-cache, fused-merge and certificate hooks of cuda/hooks.hpp, kept in the
// dispatch layer (see hook_state.cuh).
#include <atomic>

#include "core/env_switch.hpp"

#include "cuda/hooks.hpp"
#include "cuda/pipeline/hook_state.cuh"

namespace gknn::detail::cuda {
namespace {

std::atomic<int64_t> g_texture_limit{0};
std::atomic<int64_t> g_texture_fallbacks{0};
std::atomic<bool> g_operand_cache{true};
std::atomic<int64_t> g_operand_rows{0};
std::atomic<bool> g_fused_split_merge{true};
std::atomic<bool> g_staged_certificate{!env_switch_off("GKNN_STAGED_CERTIFICATE")};

}  // namespace

void set_texture_limit_override(int64_t elements) { g_texture_limit.store(elements); }
int64_t texture_fallback_count() { return g_texture_fallbacks.load(); }
int64_t texture_limit_override() { return g_texture_limit.load(); }
void count_texture_fallbacks(int64_t n) {
  if (n > 0) g_texture_fallbacks.fetch_add(n);
}
void set_operand_cache_enabled(bool on) { g_operand_cache.store(on); }
bool operand_cache_enabled() { return g_operand_cache.load(); }
void set_fused_split_merge_enabled(bool on) { g_fused_split_merge.store(on); }
bool fused_split_merge_enabled() { return g_fused_split_merge.load(); }
void set_staged_certificate_enabled(bool on) { g_staged_certificate.store(on); }
bool staged_certificate_enabled() { return g_staged_certificate.load(); }
int64_t operand_cache_rows_converted() { return g_operand_rows.load(); }
void count_operand_rows(int64_t rows) {
  if (rows > 0) g_operand_rows.fetch_add(rows);
}

}  // namespace gknn::detail::cuda
