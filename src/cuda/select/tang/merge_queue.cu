// merge_queue.cu: SelectAlgorithm::MergeQueue (Tang et al.), every combination of aligned / buffered / hp.
#include "cuda/select/families.cuh"
#include "cuda/select/tang/kernel.cuh"

namespace gknn::detail::cuda {

void merge_queue_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  tang::run_tang<tang::MergeQueue>(/*merges=*/true, in, k, out, ctx);
}

size_t merge_queue_workspace(int64_t rows, int64_t cols, int64_t k) { return tang::workspace_bound(rows, cols, k); }

}  // namespace gknn::detail::cuda
