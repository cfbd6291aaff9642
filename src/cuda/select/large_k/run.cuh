// run.cuh: the host side of a large-k selection, shared by sample select and radix select (each .cu
// instantiates it with its bucketer).
//
// Output: the k smallest of each row in the total order; with options.sorted == false the same k pairs in an
// unspecified order (a fast mode for direct use; search and select_k ask for sorted output).
#pragma once

#include <cstdint>

#include "cuda/common/error.cuh"
#include "cuda/select/large_k/launch.cuh"
#include "cuda/select/large_k/plan.cuh"
#include "cuda/select/large_k/search.cuh"
#include "cuda/primitives/row_sort.cuh"
#include "cuda/select/select.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda::large_k {

template <class Bucketer, bool kSingleStage>
void cooperating_passes(const Problem& pb, uint32_t blocks_per_row, cudaStream_t stream) {
  const dim3 wide(blocks_per_row, pb.rows);
  for (int pass = 0; pass < kMultiBlockPasses; ++pass) {  // rows already done return at once
    prepare_kernel<Bucketer><<<pb.rows, kThreads, 0, stream>>>(pb);
    GKNN_CUDA_CHECK_LAUNCH();
    histogram_kernel<Bucketer><<<wide, kThreads, 0, stream>>>(pb);
    GKNN_CUDA_CHECK_LAUNCH();
    choose_kernel<Bucketer, kSingleStage><<<pb.rows, kThreads, 0, stream>>>(pb);
    GKNN_CUDA_CHECK_LAUNCH();
    partition_kernel<Bucketer, kSingleStage><<<wide, kThreads, 0, stream>>>(pb);
    GKNN_CUDA_CHECK_LAUNCH();
  }
}

template <class Bucketer, bool kSingleStage>
void search(const Problem& pb, const Plan& plan, int device, cudaStream_t stream) {
  launch_init(pb, stream);
  uint32_t blocks_per_row = 1;
  if (plan.multi_block) {
    blocks_per_row = cooperating_blocks(pb.rows, pb.cols, device);
    cooperating_passes<Bucketer, kSingleStage>(pb, blocks_per_row, stream);
  }
  if (kSingleStage || !plan.multi_block) {
    row_kernel<Bucketer, kSingleStage, true><<<pb.rows, kThreads, 0, stream>>>(pb);
    GKNN_CUDA_CHECK_LAUNCH();
    return;
  }
  row_kernel<Bucketer, false, false><<<pb.rows, kThreads, 0, stream>>>(pb);
  GKNN_CUDA_CHECK_LAUNCH();
  launch_filter(pb, blocks_per_row, stream);
  launch_ties(pb, stream);
}

template <class Bucketer>
void run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  if (in.rows == 0) return;
  GKNN_EXPECT(in.cols <= kMaxCols, ErrorCode::Unsupported, "large-k selection: rows of ", in.cols,
              " keys are longer than the supported ", kMaxCols);
  GKNN_EXPECT(k >= 1 && k <= in.cols, ErrorCode::Internal, "large-k selection: k = ", k, " outside [1, ", in.cols,
              "]");
  GKNN_EXPECT(in.rows <= int64_t{INT32_MAX}, ErrorCode::Unsupported, "large-k selection: ", in.rows,
              " rows exceed one launch");
  GKNN_EXPECT(!ctx.options.sorted || k <= int64_t{INT32_MAX}, ErrorCode::Unsupported,
              "large-k selection: sorting k = ", k, " results per row exceeds the sort's int item count");
  const bool single_stage = !ctx.options.two_stage;
  const Plan plan = make_plan(in.rows, in.cols, k, single_stage, in.labels != nullptr, ctx.options.sorted);
  void* ws = ctx.workspace.get(plan.total);
  Problem pb = make_problem(in, k, out, plan, ws);
  pb.bracket = ctx.options.sampled_bracket && !plan.multi_block;
  pb.bracket_shift = ctx.options.overrides.bracket_rank_shift;
  if (single_stage) search<Bucketer, true>(pb, plan, ctx.device, ctx.stream);
  else search<Bucketer, false>(pb, plan, ctx.device, ctx.stream);
  if (plan.sorted) {  // the k selected pairs of each row, sorted where they are
    const RowSortInput selected{out.keys, out.labels, out.stride, in.rows, k, in.label_offset,
                                plan.user_labels ? 0 : in.cols};
    sort_rows(selected, RowSortOutput{out.keys, out.labels, out.stride, k},
              static_cast<unsigned char*>(ws) + plan.sort_off, plan.sort, ctx.stream);
  }
}

}  // namespace gknn::detail::cuda::large_k
