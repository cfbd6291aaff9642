// bits_global.cu: bits with each block row's top-k kept in global memory (workspace) between merges, so that
// k is not limited by shared memory (k <= 4096 here); only the candidate buffer lives in shared memory.
// Kernel and host logic are bits' (bits/bits_kernel.cuh with kGlobal = true, bits/bits.cu).
#include <iterator>

#include "cuda/select/bits/bits.cuh"
#include "cuda/select/families.cuh"

namespace gknn::cuda_detail {
namespace {

constexpr int kBitsGlobalBuckets[] = {256, 1024, 4096};

void launch_bits_global_bucket(int bucket, const BitsLaunch& l) {
  switch (bucket) {
    case 256: return bits_launch<256, true>(l);
    case 1024: return bits_launch<1024, true>(l);
    case 4096: return bits_launch<4096, true>(l);
  }
  detail::fail(ErrorCode::Internal, "bits_global: no kernel for bucket ", bucket);
}

const BitsFamily kBitsGlobal{"bits_global", true, kBitsGlobalBuckets, int(std::size(kBitsGlobalBuckets)),
                             launch_bits_global_bucket};

}  // namespace

void bits_global_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  bits_family_run(kBitsGlobal, in, k, out, ctx);
}

size_t bits_global_workspace(int64_t rows, int64_t cols, int64_t k) {
  return bits_family_workspace(kBitsGlobal, rows, cols, k);
}

}  // namespace gknn::cuda_detail
