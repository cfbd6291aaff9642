// segmented_sort.cu: every row fully sorted with CUB's segmented radix sort, then its first k kept — the
// report's and the thesis' sort-based baseline. The sort is the backend's one row sort in the total order
// (cuda/primitives/row_sort.cuh: canonical zero, ties by label through stable sorts, the caller's own keys in
// the output); this file only states the selection's shape: whole rows in, k out.
#include <climits>
#include <cstdint>
#include <limits>

#include "cuda/primitives/row_sort.cuh"
#include "cuda/select/families.cuh"

namespace gknn::detail::cuda {
namespace {

RowSortPlan plan_for(int64_t rows, int64_t cols, bool user_labels) {
  // Whole chunks of rows (up to CUB's int item count), labels of any value.
  return plan_row_sort(rows, cols, user_labels, 0, false, std::numeric_limits<size_t>::max());
}

}  // namespace

size_t segmented_sort_workspace(int64_t rows, int64_t cols, int64_t /*k*/) {
  if (rows == 0 || cols == 0) return 0;
  // Sized for user labels, the larger layout: the workspace is asked for before the labels are known.
  return plan_for(rows, cols, true).bytes;
}

void segmented_sort_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  GKNN_EXPECT(in.cols <= INT_MAX, ErrorCode::Unsupported, "selection sort: rows of ", in.cols,
              " columns exceed CUB's 32-bit item count");
  if (in.rows == 0) return;
  const RowSortPlan plan = plan_for(in.rows, in.cols, in.labels != nullptr);
  const RowSortInput rows{in.keys, in.labels, in.stride, in.rows, in.cols, in.label_offset, 0};
  sort_rows(rows, RowSortOutput{out.keys, out.labels, out.stride, k}, ctx.workspace.get(plan.bytes), plan, ctx.stream);
}

}  // namespace gknn::detail::cuda
