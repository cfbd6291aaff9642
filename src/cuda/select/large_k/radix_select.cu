// radix_select.cu: radix select for any k (thesis 3.7.2, 4.3): buckets are 8-bit digits of the ordered key,
// most significant first; see large_k/ for the search, the variants and the output sort.
#include "cuda/select/families.cuh"
#include "cuda/select/large_k/plan.cuh"
#include "cuda/select/large_k/run.cuh"

namespace gknn::detail::cuda {

void radix_select_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  large_k::run<large_k::RadixBucketer>(in, k, out, ctx);
}

size_t radix_select_workspace(int64_t rows, int64_t cols, int64_t k) { return large_k::workspace_bytes(rows, cols, k); }

}  // namespace gknn::detail::cuda
