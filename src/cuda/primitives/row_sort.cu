// row_sort.cu: sort_rows (row_sort.cuh).
#include <algorithm>
#include <climits>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "cuda/common/error.cuh"
#include "cuda/primitives/ordered.cuh"
#include "cuda/primitives/row_sort.cuh"
#include "cuda/primitives/segments.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// Workspace of one chunk of `rows` rows: byte offsets of its arrays.
struct Layout {
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, lab_in = 0, lab_out = 0, idx_out = 0,  // pairs
      composite0 = 0, composite1 = 0,                                                                // composite
      offsets = 0, temp = 0, temp_bytes = 0, total = 0;
};

/// Radix-sort end bit of the composite keys of labels within `span` columns.
int composite_end_bit_for(int64_t span) {
  return composite_end_bit(composite_column_bits(static_cast<uint64_t>(span)));
}

/// One stable pair sort of a chunk: segmented, or device-wide when every chunk is one row. With temp == nullptr
/// it only sets `bytes` (CUB then reads only the counts, never the arrays or offsets).
template <class K>
void pair_sort(void* temp, size_t& bytes, const K* keys_in, K* keys_out, const int* values_in, int* values_out,
               int64_t rows, int64_t width, const int* offsets, int end_bit, bool device_wide, cudaStream_t stream) {
  const int items = static_cast<int>(rows * width);
  if (device_wide)
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, values_in, values_out, items, 0,
                                                  end_bit, stream));
  else
    GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(temp, bytes, keys_in, keys_out, values_in, values_out,
                                                           items, static_cast<int>(rows), offsets,
                                                           offsets ? offsets + 1 : nullptr, 0,
                                                           end_bit, stream));
}

/// Keys-only sort of composite keys (CUB double buffer), segmented or device-wide as pair_sort.
void composite_sort(void* temp, size_t& bytes, cub::DoubleBuffer<uint64_t>& keys, int64_t rows, int64_t width,
                    const int* offsets, int end_bit, bool device_wide, cudaStream_t stream) {
  const int items = static_cast<int>(rows * width);
  if (device_wide)
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp, bytes, keys, items, 0, end_bit, stream));
  else
    GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeys(temp, bytes, keys, items, static_cast<int>(rows), offsets,
                                                          offsets ? offsets + 1 : nullptr, 0, end_bit, stream));
}

size_t cub_temp_bytes(int64_t rows, int64_t width, bool explicit_labels, int64_t label_span, bool device_wide) {
  size_t keys = 0, labels = 0;
  if (explicit_labels && label_span > 0) {
    cub::DoubleBuffer<uint64_t> none(nullptr, nullptr);
    composite_sort(nullptr, keys, none, rows, width, nullptr, composite_end_bit_for(label_span), device_wide, 0);
    return keys;
  }
  pair_sort<float>(nullptr, keys, nullptr, nullptr, nullptr, nullptr, rows, width, nullptr, 32, device_wide, 0);
  if (explicit_labels)
    pair_sort<int64_t>(nullptr, labels, nullptr, nullptr, nullptr, nullptr, rows, width, nullptr, 64, device_wide, 0);
  return std::max(keys, labels);
}

Layout layout(int64_t rows, int64_t width, bool explicit_labels, int64_t label_span, bool device_wide) {
  const size_t n = static_cast<size_t>(rows * width);
  Layout l;
  size_t at = 0;
  auto take = [&at](size_t bytes) {
    const size_t here = at;
    at += aligned(bytes);
    return here;
  };
  if (explicit_labels && label_span > 0) {
    l.composite0 = take(n * sizeof(uint64_t));
    l.composite1 = take(n * sizeof(uint64_t));
  } else {
    l.keys_in = take(n * sizeof(float));
    l.keys_out = take(n * sizeof(float));
    l.pos_in = take(n * sizeof(int));
    l.pos_out = take(n * sizeof(int));
    if (explicit_labels) {
      l.lab_in = take(n * sizeof(int64_t));
      l.lab_out = take(n * sizeof(int64_t));
      l.idx_out = l.lab_in;  // the key sort's ranks: the labels' sort input is dead by then
    }
  }
  l.offsets = take(static_cast<size_t>(rows + 1) * sizeof(int));
  l.temp_bytes = cub_temp_bytes(rows, width, explicit_labels, label_span, device_wide);
  l.temp = take(l.temp_bytes);
  l.total = at;
  return l;
}

__device__ __forceinline__ float canonical(float key) { return key == 0.f ? 0.f : key; }  // -0.0 -> +0.0

/// Sort input of a chunk (pair paths): canonical keys with their positions (implied labels), or the labels with
/// their positions (any labels).
__global__ void prepare_kernel(RowSortInput in, float* keys_in, int* pos_in, int64_t* labels_in) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= in.width) return;
  for (int64_t r = blockIdx.y; r < in.rows; r += gridDim.y) {
    const int64_t at = r * in.width + j, src = r * in.stride + j;
    pos_in[at] = static_cast<int>(j);
    if (in.labels)
      labels_in[at] = in.labels[src];
    else
      keys_in[at] = canonical(in.keys[src]);
  }
}

/// Composite path: one 64-bit key per pair, the ordered key above the label's column bits.
__global__ void composite_kernel(RowSortInput in, int column_bits, uint64_t* composite) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= in.width) return;
  for (int64_t r = blockIdx.y; r < in.rows; r += gridDim.y) {
    const int64_t src = r * in.stride + j;
    composite[r * in.width + j] = composite_key(ordered_from_bits(__float_as_uint(in.keys[src])),
                                                static_cast<uint32_t>(in.labels[src] - in.label_offset), column_bits);
  }
}

/// Composite path: the first keep pairs of each sorted row (canonical keys).
__global__ void composite_output_kernel(RowSortInput in, RowSortOutput out, int column_bits,
                                        const uint64_t* __restrict__ sorted) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= out.keep) return;
  for (int64_t r = blockIdx.y; r < in.rows; r += gridDim.y) {
    const uint64_t c = sorted[r * in.width + j];
    out.keys[r * out.stride + j] = __uint_as_float(bits_from_ordered(composite_ordered(c, column_bits)));
    out.labels[r * out.stride + j] = in.label_offset + static_cast<int64_t>(composite_column(c, column_bits));
  }
}

/// Explicit labels, after the label sort: the canonical keys in label order, each with its rank in that order.
__global__ void gather_keys_kernel(RowSortInput in, const int* __restrict__ order, float* keys_in, int* rank) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= in.width) return;
  for (int64_t r = blockIdx.y; r < in.rows; r += gridDim.y) {
    const int64_t at = r * in.width + i;
    keys_in[at] = canonical(in.keys[r * in.stride + order[at]]);
    rank[at] = static_cast<int>(i);
  }
}

/// Pair paths: the first keep pairs of each sorted row. sorted: the key sort's values (positions, or ranks in
/// label order); order: positions in label order; labels: the sorted labels (any labels only).
__global__ void output_kernel(RowSortInput in, RowSortOutput out, bool in_place, const float* __restrict__ sorted_keys,
                              const int* __restrict__ sorted, const int* __restrict__ order,
                              const int64_t* __restrict__ labels) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= out.keep) return;
  for (int64_t r = blockIdx.y; r < in.rows; r += gridDim.y) {
    const int64_t at = r * in.width + j;
    const int64_t rank = sorted[at];
    const int64_t pos = in.labels ? order[r * in.width + rank] : rank;
    out.keys[r * out.stride + j] = in_place ? sorted_keys[at] : in.keys[r * in.stride + pos];
    out.labels[r * out.stride + j] = in.labels ? labels[r * in.width + rank] : in.label_offset + pos;
  }
}

dim3 grid_for(int64_t width, int64_t rows) {
  return dim3(static_cast<unsigned>((width + kThreads - 1) / kThreads),
              static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
}

}  // namespace

RowSortPlan plan_row_sort(int64_t rows, int64_t width, bool explicit_labels, int64_t label_span, bool row_by_row,
                          size_t room) {
  RowSortPlan p;
  if (rows <= 0 || width <= 0) return p;
  const int64_t span = explicit_labels ? label_span : 0;
  const size_t per_pair = span > 0 ? 16 : explicit_labels ? 32 : 16;
  int64_t chunk = row_by_row ? 1 : static_cast<int64_t>(std::max<size_t>(1, room / (per_pair * width)));
  chunk = std::min({chunk, rows, int64_t{INT_MAX} / width});  // CUB's int item count
  p.chunk_rows = std::max<int64_t>(chunk, 1);
  p.bytes = layout(p.chunk_rows, width, explicit_labels, span, p.chunk_rows == 1).total;
  return p;
}

void sort_rows(const RowSortInput& in, const RowSortOutput& out, void* workspace, const RowSortPlan& plan,
               cudaStream_t stream) {
  if (in.rows == 0 || out.keep == 0) return;
  const bool labels = in.labels != nullptr, composite = labels && in.label_span > 0;
  const bool device_wide = plan.chunk_rows == 1;
  const Layout l = layout(plan.chunk_rows, in.width, labels, composite ? in.label_span : 0, device_wide);
  auto* base = static_cast<unsigned char*>(workspace);
  auto* offsets = reinterpret_cast<int*>(base + l.offsets);
  void* temp = base + l.temp;
  if (!device_wide) fill_segment_offsets(offsets, plan.chunk_rows, in.width, stream);
  const bool in_place = out.keys == in.keys;
  const int column_bits = composite ? composite_column_bits(static_cast<uint64_t>(in.label_span)) : 0;
  for (int64_t row0 = 0; row0 < in.rows; row0 += plan.chunk_rows) {
    RowSortInput part = in;
    part.rows = std::min(plan.chunk_rows, in.rows - row0);
    part.keys = in.keys + row0 * in.stride;
    part.labels = labels ? in.labels + row0 * in.stride : nullptr;
    RowSortOutput out_part = out;
    out_part.keys = out.keys + row0 * out.stride;
    out_part.labels = out.labels + row0 * out.stride;
    const dim3 grid = grid_for(in.width, part.rows), out_grid = grid_for(out.keep, part.rows);
    size_t bytes = l.temp_bytes;
    if (composite) {
      auto* c0 = reinterpret_cast<uint64_t*>(base + l.composite0);
      auto* c1 = reinterpret_cast<uint64_t*>(base + l.composite1);
      composite_kernel<<<grid, kThreads, 0, stream>>>(part, column_bits, c0);
      GKNN_CUDA_CHECK_LAUNCH();
      cub::DoubleBuffer<uint64_t> keys(c0, c1);
      composite_sort(temp, bytes, keys, part.rows, in.width, offsets, composite_end_bit(column_bits), device_wide,
                     stream);
      composite_output_kernel<<<out_grid, kThreads, 0, stream>>>(part, out_part, column_bits, keys.Current());
      GKNN_CUDA_CHECK_LAUNCH();
      continue;
    }
    auto* keys_in = reinterpret_cast<float*>(base + l.keys_in);
    auto* keys_out = reinterpret_cast<float*>(base + l.keys_out);
    auto* pos_in = reinterpret_cast<int*>(base + l.pos_in);
    auto* pos_out = reinterpret_cast<int*>(base + l.pos_out);  // any labels: positions in label order
    auto* labels_in = reinterpret_cast<int64_t*>(base + l.lab_in);
    auto* labels_out = reinterpret_cast<int64_t*>(base + l.lab_out);
    prepare_kernel<<<grid, kThreads, 0, stream>>>(part, keys_in, pos_in, labels_in);
    GKNN_CUDA_CHECK_LAUNCH();
    const int* sorted = pos_out;
    if (labels) {
      pair_sort<int64_t>(temp, bytes, labels_in, labels_out, pos_in, pos_out, part.rows, in.width, offsets, 64,
                         device_wide, stream);
      gather_keys_kernel<<<grid, kThreads, 0, stream>>>(part, pos_out, keys_in, pos_in);
      GKNN_CUDA_CHECK_LAUNCH();
      auto* ranks = reinterpret_cast<int*>(base + l.idx_out);
      bytes = l.temp_bytes;
      pair_sort<float>(temp, bytes, keys_in, keys_out, pos_in, ranks, part.rows, in.width, offsets, 32, device_wide,
                       stream);
      sorted = ranks;
    } else {
      pair_sort<float>(temp, bytes, keys_in, keys_out, pos_in, pos_out, part.rows, in.width, offsets, 32,
                       device_wide, stream);
    }
    output_kernel<<<out_grid, kThreads, 0, stream>>>(part, out_part, in_place, keys_out, sorted, pos_out, labels_out);
    GKNN_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace gknn::detail::cuda
