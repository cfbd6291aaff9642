// bits_global.cu: bits with each block row's top-k kept in global memory (workspace) between merges, so that
// k is not limited by shared memory (k <= 4096 here); only the candidate buffer lives in shared memory.
// Kernel and host logic are bits' (bits/bits_kernel.cuh with kGlobal = true, bits/bits.cu).
#include <iterator>

#include "cuda/select/bits/bits.cuh"
#include "cuda/select/families.cuh"

namespace gknn::cuda_detail {
namespace {

const BitsBucket kBitsGlobalBuckets[] = {GKNN_BITS_TABLE_ROW(256, true), GKNN_BITS_TABLE_ROW(1024, true),
                                         GKNN_BITS_TABLE_ROW(4096, true)};
const BitsFamily kBitsGlobal{"bits_global", true, kBitsGlobalBuckets, int(std::size(kBitsGlobalBuckets))};

}  // namespace

void bits_global_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  bits_family_run(kBitsGlobal, in, k, out, ctx);
}

size_t bits_global_workspace(int64_t rows, int64_t cols, int64_t k) {
  return bits_family_workspace(kBitsGlobal, rows, cols, k);
}

}  // namespace gknn::cuda_detail
