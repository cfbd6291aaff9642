// plan.cu: workspace layout and path choice of the large-k selections (see plan.cuh).
#include <algorithm>
#include <cstdint>

#include "cuda/common/device.cuh"
#include "cuda/select/large_k/plan.cuh"

namespace gknn::detail::cuda::large_k {
namespace {

constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// Room the output sort may take without growing the workspace beyond the selection's own needs.
constexpr size_t kMinSortRoom = size_t{256} << 20;

}  // namespace

bool uses_multi_block(int64_t rows, int64_t cols) { return rows < kMultiBlockMaxRows && cols >= kMultiBlockMinCols; }

Plan make_plan(int64_t rows, int64_t cols, int64_t k, bool single_stage, bool user_labels, bool sorted) {
  Plan p;
  p.multi_block = uses_multi_block(rows, cols);
  p.single_stage = single_stage;
  p.sorted = sorted && k > 1;
  p.user_labels = user_labels;
  const size_t per_buffer = aligned(static_cast<size_t>(rows) * static_cast<size_t>(cols) * sizeof(uint32_t));
  size_t at = aligned(static_cast<size_t>(rows) * sizeof(RowState));
  const size_t aux_begin = at;
  for (uint32_t loc : {kAuxA, kAuxB}) {
    if (loc == kAuxB && !p.multi_block) break;
    p.aux_keys_off[loc] = at;
    at += per_buffer;
    if (single_stage) {
      p.aux_cols_off[loc] = at;
      at += per_buffer;
    }
  }
  p.total = at;
  if (p.sorted) {
    // Column labels lie in [label_offset, label_offset + cols): composite keys over only the bits they need.
    p.sort = plan_row_sort(rows, k, true, user_labels ? 0 : cols, p.multi_block, std::max(at - aux_begin, kMinSortRoom));
    p.sort_off = aux_begin;  // the selection is done when the sort starts
    p.total = std::max(p.total, aux_begin + p.sort.bytes);
  }
  return p;
}

size_t workspace_bytes(int64_t rows, int64_t cols, int64_t k) {
  size_t most = 0;
  const bool sortable = k <= INT32_MAX;  // run() refuses to sort more per row
  for (bool single_stage : {false, true})
    for (bool user_labels : {false, true})
      most = std::max(most, make_plan(rows, cols, k, single_stage, user_labels, sortable).total);
  return most;
}

Problem make_problem(const SelectInput& in, int64_t k, const SelectOutput& out, const Plan& plan, void* ws) {
  auto* base = static_cast<unsigned char*>(ws);
  Problem pb{};
  pb.keys = in.keys;
  pb.labels = in.labels;
  pb.in_stride = in.stride;
  pb.label_offset = in.label_offset;
  pb.out_keys = out.keys;
  pb.out_labels = out.labels;
  pb.out_stride = out.stride;
  pb.rows = static_cast<uint32_t>(in.rows);
  pb.cols = static_cast<uint32_t>(in.cols);
  pb.k = static_cast<uint32_t>(k);
  pb.state = reinterpret_cast<RowState*>(base);
  const auto at = [&](size_t off) { return off ? reinterpret_cast<uint32_t*>(base + off) : nullptr; };
  pb.aux_keys_a = at(plan.aux_keys_off[kAuxA]);
  pb.aux_keys_b = at(plan.aux_keys_off[kAuxB]);
  pb.aux_cols_a = at(plan.aux_cols_off[kAuxA]);
  pb.aux_cols_b = at(plan.aux_cols_off[kAuxB]);
  return pb;
}

uint32_t cooperating_blocks(int64_t rows, int64_t cols, int device) {
  const int64_t want = (device_props(device).sm_count * int64_t{kPolicy.blocks_per_sm} + rows - 1) / rows;
  const int64_t tiles = (cols + kTile - 1) / kTile;
  return static_cast<uint32_t>(std::clamp<int64_t>(want, 1, std::min<int64_t>(tiles, 65535)));
}

}  // namespace gknn::detail::cuda::large_k
