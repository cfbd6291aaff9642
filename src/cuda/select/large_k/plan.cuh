// plan.cuh: how a large-k selection lays out its workspace and which path it takes.
//
// Workspace: per-row search state, then the auxiliary buffers (ordered keys, plus columns for single-stage;
// a second pair for the cooperating passes, which cannot compact in place): O(n) per row, as the thesis'
// buffer. The sort of a sorted output (primitives/row_sort.cuh) reuses the auxiliary region once the selection
// is done.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/select/large_k/common.cuh"
#include "cuda/primitives/row_sort.cuh"
#include "cuda/select/select.cuh"

namespace gknn::detail::cuda::large_k {

/// When blocks cooperate on a row (tuning.hpp).
constexpr int64_t kMultiBlockMaxRows = kPolicy.multi_block_max_rows;
constexpr int64_t kMultiBlockMinCols = kPolicy.multi_block_min_tiles * int64_t{kTile};
/// Cooperating passes before one block per row finishes (radix select has four 8-bit digits).
constexpr int kMultiBlockPasses = 4;
/// Columns and counts are uint32.
constexpr int64_t kMaxCols = int64_t{UINT32_MAX} - 1;

struct Plan {
  bool multi_block = false;
  bool single_stage = false;
  bool sorted = false;
  bool user_labels = false;
  size_t aux_keys_off[3] = {0, 0, 0};  ///< byte offsets; kInput unused
  size_t aux_cols_off[3] = {0, 0, 0};  ///< 0 = absent (offset 0 is the state)
  size_t sort_off = 0;
  RowSortPlan sort;  ///< the sorted output: the row sort of the k selected pairs, in place
  size_t total = 0;
};

bool uses_multi_block(int64_t rows, int64_t cols);
Plan make_plan(int64_t rows, int64_t cols, int64_t k, bool single_stage, bool user_labels, bool sorted);
/// Largest workspace over the variants (the options are not known when memory is planned).
size_t workspace_bytes(int64_t rows, int64_t cols, int64_t k);
/// Pointers of a launch into the workspace `ws` laid out by `plan`.
Problem make_problem(const SelectInput& in, int64_t k, const SelectOutput& out, const Plan& plan, void* ws);
/// Blocks per row for the cooperating passes: enough blocks to fill the device, at most one per tile.
uint32_t cooperating_blocks(int64_t rows, int64_t cols, int device);

}  // namespace gknn::detail::cuda::large_k
