// block_select.cu: the block_select entry; kernels and dispatch are shared with warp_select
// (warp_queue_kernel.cuh, warp_select.cu).
#include "cuda/select/families.cuh"
#include "cuda/select/warp_queue/warp_select.cuh"

namespace gknn::detail::cuda {

void block_select_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  warp_queue_family_run(true, in, k, out, ctx);
}

size_t block_select_workspace(int64_t, int64_t, int64_t) { return 0; }

}  // namespace gknn::detail::cuda
