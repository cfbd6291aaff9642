// bits_global.cu: bits with each block row's top-k kept in global memory (workspace) between merges, so that
// k is not limited by shared memory (k <= 4096 here); only the candidate buffer lives in shared memory.
// Kernel and host logic are bits' (bits_kernel.cuh with kGlobal = true, bits.cu).
#include "cuda/select/bits/bits.cuh"
#include "cuda/select/bits/tuning.hpp"
#include "cuda/select/families.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr BitsFamily kBitsGlobal = make_bits_family<bits_tuning::BitsGlobalBuckets, true>("bits_global");

}  // namespace

void bits_global_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  bits_family_run(kBitsGlobal, in, k, out, ctx);
}

size_t bits_global_workspace(int64_t rows, int64_t cols, int64_t k) {
  return bits_family_workspace(kBitsGlobal, rows, cols, k);
}

}  // namespace gknn::detail::cuda
