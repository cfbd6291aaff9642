// select_rows.cu: row tiles of select_k (host -> device -> selector -> host), double-buffered like a search.
#include <algorithm>
#include <future>

#include "core/finalize.hpp"
#include "cuda/pipeline/select_rows.cuh"
#include "cuda/pipeline/staging.cuh"
#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {

Result run_select(Pipeline& p, FloatView keys, const int64_t* labels, int64_t k, const SelectParams& params,
                  size_t budget) {
  const int64_t rows = keys.rows, cols = keys.cols, stride = keys.row_stride();
  if (rows == 0) return Result{0, k, {}, {}};
  GKNN_EXPECT(k >= 1 && k <= cols, ErrorCode::Internal, "run_select: k = ", k, " outside [1, ", cols, "]");
  const SelectEntry& select = resolve_select(params.algorithm, rows, cols, k);
  const int64_t tile_rows = plan_select_rows(rows, cols, k, labels != nullptr, budget, select.workspace_bytes);
  for (int i = 0; i < 4; ++i) {
    p.list_keys[i].resize(static_cast<size_t>(tile_rows * k));
    p.list_labels[i].resize(static_cast<size_t>(tile_rows * k));
  }
  const cudaStream_t s = p.compute.get();
  // The pipeline's staging slots: repeated calls on a cached pipeline allocate no pinned or device memory.
  Stager<float> key_stager(keys.data, stride, cols, tile_rows, p.upload.get(), nullptr, &p.query_slots);
  Stager<int64_t> label_stager(labels, stride, cols, tile_rows, p.upload.get(), nullptr, &p.label_slots);
  ResultSlots results(tile_rows, k, nullptr, &p.select_results);
  // The result (its pages populated by the allocation) is made on a helper thread while the device selects the
  // first tiles, when it is large enough for that to pay off (as a search's result, result_writer.cu).
  std::future<Result> ahead;
  Result result;
  if (static_cast<size_t>(rows) * static_cast<size_t>(k) * 12 > (size_t(4) << 20))
    ahead = std::async(std::launch::async, [rows, k] { return detail::allocate_result_populated(rows, k); });
  else
    result = detail::allocate_result(rows, k);
  auto finish = [&](int slot) {
    if (ahead.valid()) result = ahead.get();
    results.finish(slot, result);
  };
  int64_t tile_index = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += tile_rows, ++tile_index) {
    const int slot = static_cast<int>(tile_index % 2);
    if (tile_index >= 2) finish(slot);  // the slot's output lists are reused below
    const int64_t n = std::min(tile_rows, rows - r0);
    const float* dkeys = key_stager.upload(r0, n, s);
    const int64_t* dlabels = labels ? label_stager.upload(r0, n, s) : nullptr;
    const SelectInput in{dkeys, dlabels, cols, n, cols, 0};
    const SelectOutput out{p.list_keys[slot].data(), p.list_labels[slot].data(), k};
    select.run(in, k, out, SelectContext{params.options, p.select_workspace, s, p.device});
    key_stager.release(s);
    if (labels) label_stager.release(s);
    results.download(slot, out.keys, out.labels, r0, n, s);
  }
  finish(static_cast<int>(tile_index % 2));
  finish(static_cast<int>((tile_index + 1) % 2));
  p.upload.sync();
  return result;
}

}  // namespace gknn::detail::cuda
