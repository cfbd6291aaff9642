// select_rows.cu: row tiles of select_k (host rows staged to the device, device views read where they are), each
// selected and finalised on the device, written out through the search's ResultWriter (see select_rows.cuh).
#include <algorithm>
#include <optional>

#include "cuda/common/error.cuh"
#include "cuda/pipeline/finalize.cuh"
#include "cuda/pipeline/select_rows.cuh"
#include "cuda/pipeline/staging.cuh"
#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {
namespace {

/// dst[r * stride + c] = -src[r * stride + c] for c < cols: a descending selection on ascending selectors (exact).
/// The copy keeps the source's row stride so that the labels, read with the same stride, still match.
__global__ void negate_kernel(const float* __restrict__ src, int64_t rows, int64_t stride, int64_t cols,
                              float* __restrict__ dst) {
  const int64_t total = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i - r * cols;
    dst[r * stride + c] = -src[r * stride + c];
  }
}

void negate_rows(const float* src, int64_t rows, int64_t stride, int64_t cols, float* dst, cudaStream_t s) {
  const int64_t total = rows * cols;
  if (total == 0) return;
  const int64_t blocks = std::min<int64_t>((total + 255) / 256, 65535);
  negate_kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(src, rows, stride, cols, dst);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void run_select_into(Pipeline& p, FloatView values, const int64_t* labels, int64_t k, bool negate,
                     const SelectParams& params, size_t budget, const OutputSpec& out) {
  const int64_t rows = values.rows, cols = values.cols;
  if (rows == 0) return;
  GKNN_EXPECT(k >= 1 && k <= cols && out.k >= k, ErrorCode::Internal, "run_select_into: k = ", k, " outside [1, ",
              cols, "] or above the output's ", out.k);
  const bool device_in = values.memory == Memory::Device, host_out = out.memory == Memory::Host;
  // Rows as the selector reads them: a device view's own stride, staged host rows packed.
  const int64_t stride = device_in ? values.row_stride() : cols;
  const SelectEntry& select = resolve_select(params.algorithm, rows, cols, k);
  const SelectTileBytes extra{!device_in, negate ? stride : 0, host_out ? out.k : 0};
  const int64_t tile_rows =
      plan_select_rows(rows, cols, k, labels != nullptr, budget, select.workspace_bytes, extra);
  for (int i = 0; i < 2; ++i) {
    p.list_keys[i].resize(static_cast<size_t>(tile_rows * k));
    p.list_labels[i].resize(static_cast<size_t>(tile_rows * k));
  }
  if (negate) p.distances.resize(static_cast<size_t>(tile_rows * stride));  // one tile at a time, stream-ordered
  const cudaStream_t s = p.compute.get();
  std::optional<Stager<float>> key_stager;
  std::optional<Stager<int64_t>> label_stager;
  if (!device_in) {
    key_stager.emplace(values.data, values.row_stride(), cols, tile_rows, p.upload.get(), nullptr, &p.query_slots);
    if (labels)
      label_stager.emplace(labels, values.row_stride(), cols, tile_rows, p.upload.get(), nullptr, &p.label_slots);
  }
  // The search's writer: a device destination is written by the finalise kernel in place; a host one through the
  // pipeline's pinned output slots, tile i's copy-out overlapping tile i + 1's selection.
  ResultWriter writer(p.out_slots, 2, !host_out, out.destination, out.k, tile_rows, rows, nullptr);
  const auto landed = [](int64_t) {};
  int64_t tile_index = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += tile_rows, ++tile_index) {
    const int slot = static_cast<int>(tile_index % 2);
    writer.finish(slot);  // the slot's previous tile lands before its buffers are reused
    const int64_t n = std::min(tile_rows, rows - r0);
    const float* keys = device_in ? values.data + r0 * stride : key_stager->upload(r0, n, s);
    const int64_t* tile_labels = !labels ? nullptr : device_in ? labels + r0 * stride : label_stager->upload(r0, n, s);
    if (negate) {
      negate_rows(keys, n, stride, cols, p.distances.data(), s);
      keys = p.distances.data();
    }
    const SelectOutput lists{p.list_keys[slot].data(), p.list_labels[slot].data(), k};
    select.run(SelectInput{keys, tile_labels, stride, n, cols, 0}, k, lists,
               SelectContext{params.options, p.select_workspace, s, p.device});
    if (key_stager) key_stager->release(s);
    if (label_stager) label_stager->release(s);
    const ResultWriter::Target target = writer.target(slot, r0);
    finalize_rows(
        finalize_args(lists.keys, lists.labels, k, n, out.metric, out.p, out.k, target.values, target.indices), s);
    writer.commit(slot, r0, n, s);
    writer.land_ready(landed);
  }
  writer.finish_all(landed);
  p.compute.sync();  // a device destination is complete when the call returns
  p.upload.sync();
}

}  // namespace gknn::detail::cuda
