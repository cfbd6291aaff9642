// segmented_sort.cu: every row fully sorted with CUB's segmented radix sort, then its first k kept — the
// report's and the thesis' sort-based baseline.
//
// EXACT TOTAL ORDER. A radix sort orders bit patterns and is stable, so:
//   * -0.0 and +0.0 have different bits; keys are canonicalised (-0.0 -> +0.0) in the sort copy, and the output
//     reports the original input key (gathered by column), so the caller sees its own values;
//   * ties must end up by ascending label. Without user labels the labels are label_offset + column, which
//     the sort input lists in ascending order, so stability alone is enough. With user labels the row is first
//     sorted by label (stable radix sort on the int64 labels, carrying the column), the keys are gathered in
//     that order, and the stable key sort then leaves equal keys in label order.
// Values carried through the sorts are int32 column indices; CUB's segmented sort counts items in int, so rows
// are processed in chunks of at most INT_MAX elements.
#include <climits>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "cuda/primitives/segments.cuh"
#include "cuda/select/families.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;

/// The scratch arrays of one chunk, carved out of the workspace.
struct SortScratch {
  float* keys_in;
  float* keys_out;
  int* cols_in;
  int* cols_out;
  int64_t* labels_in;   // user labels only
  int64_t* labels_out;  // user labels only
  int* offsets;         // rows + 1 segment starts
  void* cub_temp;
  size_t cub_bytes;
};

size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// CUB's size query reads only the counts, never the offsets.
constexpr const int* kNoOffsets = nullptr;

size_t cub_temp_bytes(int64_t rows, int64_t cols) {
  const int n = static_cast<int>(rows * cols), segments = static_cast<int>(rows);
  size_t key_bytes = 0, label_bytes = 0;
  GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, key_bytes, static_cast<const float*>(nullptr),
                                                         static_cast<float*>(nullptr), static_cast<const int*>(nullptr),
                                                         static_cast<int*>(nullptr), n, segments, kNoOffsets,
                                                         kNoOffsets));
  GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(
      nullptr, label_bytes, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
      static_cast<const int*>(nullptr), static_cast<int*>(nullptr), n, segments, kNoOffsets, kNoOffsets));
  return key_bytes > label_bytes ? key_bytes : label_bytes;
}

/// Bytes of the scratch for a chunk of `rows` rows (layout of carve()).
size_t scratch_bytes(int64_t rows, int64_t cols) {
  const size_t n = static_cast<size_t>(rows * cols);
  return 2 * align256(n * sizeof(float)) + 2 * align256(n * sizeof(int)) + 2 * align256(n * sizeof(int64_t)) +
         align256(static_cast<size_t>(rows + 1) * sizeof(int)) + align256(cub_temp_bytes(rows, cols));
}

SortScratch carve(void* workspace, int64_t rows, int64_t cols) {
  const size_t n = static_cast<size_t>(rows * cols);
  auto* p = static_cast<unsigned char*>(workspace);
  auto take = [&p](size_t bytes) {
    void* q = p;
    p += align256(bytes);
    return q;
  };
  SortScratch s{};
  s.keys_in = static_cast<float*>(take(n * sizeof(float)));
  s.keys_out = static_cast<float*>(take(n * sizeof(float)));
  s.cols_in = static_cast<int*>(take(n * sizeof(int)));
  s.cols_out = static_cast<int*>(take(n * sizeof(int)));
  s.labels_in = static_cast<int64_t*>(take(n * sizeof(int64_t)));
  s.labels_out = static_cast<int64_t*>(take(n * sizeof(int64_t)));
  s.offsets = static_cast<int*>(take(static_cast<size_t>(rows + 1) * sizeof(int)));
  s.cub_bytes = cub_temp_bytes(rows, cols);
  s.cub_temp = take(s.cub_bytes);
  return s;
}

/// Rows per chunk so that a chunk holds at most INT_MAX elements (CUB's int item count).
int64_t chunk_rows(int64_t rows, int64_t cols) {
  const int64_t fit = INT_MAX / cols;
  return fit < rows ? fit : rows;
}

/// Pass 1 with user labels: the row's labels with their columns, to be sorted by label.
__global__ void gather_labels_kernel(const int64_t* __restrict__ labels, int64_t stride, int64_t rows, int64_t cols,
                                     int64_t* __restrict__ labels_out, int* __restrict__ cols_out) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    labels_out[r * cols + c] = labels[r * stride + c];
    cols_out[r * cols + c] = static_cast<int>(c);
  }
}

/// The sort copy of the keys in the order given by `order` (identity when null): canonical zero, column carried.
__global__ void gather_keys_kernel(const float* __restrict__ keys, int64_t stride, int64_t rows, int64_t cols,
                                   const int* __restrict__ order, float* __restrict__ keys_out,
                                   int* __restrict__ cols_out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= cols) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int c = order ? order[r * cols + i] : static_cast<int>(i);
    const float key = keys[r * stride + c];
    keys_out[r * cols + i] = key == 0.f ? 0.f : key;  // -0.0 -> +0.0: equal keys must have equal bits
    cols_out[r * cols + i] = c;
  }
}

/// The first k of each sorted row: original key and label of the column that sorted there.
__global__ void sorted_output_kernel(SelectInput in, int64_t rows, int64_t k, const int* __restrict__ sorted_cols,
                                     SelectOutput out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= k) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t c = sorted_cols[r * in.cols + i];
    out.keys[r * out.stride + i] = in.keys[r * in.stride + c];
    out.labels[r * out.stride + i] = in.labels ? in.labels[r * in.stride + c] : in.label_offset + c;
  }
}

dim3 grid_for(int64_t width, int64_t rows) {
  return dim3(static_cast<unsigned>((width + kThreads - 1) / kThreads),
              static_cast<unsigned>(rows < 65535 ? rows : 65535));
}

void sort_chunk(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  const int64_t rows = in.rows, cols = in.cols;
  const int n = static_cast<int>(rows * cols), segments = static_cast<int>(rows);
  SortScratch s = carve(ctx.workspace.get(scratch_bytes(rows, cols)), rows, cols);
  fill_segment_offsets(s.offsets, rows, cols, ctx.stream);
  const int* order = nullptr;
  if (in.labels) {
    gather_labels_kernel<<<grid_for(cols, rows), kThreads, 0, ctx.stream>>>(in.labels, in.stride, rows, cols,
                                                                           s.labels_in, s.cols_in);
    GKNN_CUDA_CHECK_LAUNCH();
    size_t bytes = s.cub_bytes;
    GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(s.cub_temp, bytes, s.labels_in, s.labels_out, s.cols_in,
                                                           s.cols_out, n, segments, s.offsets, s.offsets + 1, 0,
                                                           int(sizeof(int64_t) * 8), ctx.stream));
    order = s.cols_out;  // columns in label order
  }
  gather_keys_kernel<<<grid_for(cols, rows), kThreads, 0, ctx.stream>>>(in.keys, in.stride, rows, cols, order,
                                                                       s.keys_in, s.cols_in);
  GKNN_CUDA_CHECK_LAUNCH();
  size_t bytes = s.cub_bytes;
  GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(s.cub_temp, bytes, s.keys_in, s.keys_out, s.cols_in,
                                                         s.cols_out, n, segments, s.offsets, s.offsets + 1, 0,
                                                         int(sizeof(float) * 8), ctx.stream));
  sorted_output_kernel<<<grid_for(k, rows), kThreads, 0, ctx.stream>>>(in, rows, k, s.cols_out, out);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

size_t segmented_sort_workspace(int64_t rows, int64_t cols, int64_t /*k*/) {
  if (rows == 0 || cols == 0) return 0;
  return scratch_bytes(chunk_rows(rows, cols), cols);
}

void segmented_sort_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  GKNN_EXPECT(in.cols <= INT_MAX, ErrorCode::Unsupported, "selection sort: rows of ", in.cols,
              " columns exceed CUB's 32-bit item count");
  if (in.rows == 0) return;
  const int64_t step = chunk_rows(in.rows, in.cols);
  for (int64_t r0 = 0; r0 < in.rows; r0 += step) {
    SelectInput part = in;
    part.rows = (in.rows - r0 < step) ? in.rows - r0 : step;
    part.keys = in.keys + r0 * in.stride;
    part.labels = in.labels ? in.labels + r0 * in.stride : nullptr;
    SelectOutput out_part = out;
    out_part.keys = out.keys + r0 * out.stride;
    out_part.labels = out.labels + r0 * out.stride;
    sort_chunk(part, k, out_part, ctx);
  }
}

}  // namespace gknn::detail::cuda
