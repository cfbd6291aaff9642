// sort_output.cu: CUB sort of the selected pairs (see sort_output.cuh).
#include <algorithm>
#include <climits>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "cuda/common/error.cuh"
#include "cuda/primitives/segments.cuh"
#include "cuda/select/large_k/ordered.cuh"
#include "cuda/select/large_k/sort_output.cuh"

namespace gknn::detail::cuda::large_k {
namespace {

constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// Workspace pieces of one chunk: two buffers per sorted array (CUB double buffering), segment offsets,
/// CUB's temporary storage.
struct Layout {
  size_t a0 = 0, a1 = 0, b0 = 0, b1 = 0, offsets = 0, temp = 0, temp_bytes = 0, total = 0;
};

/// Radix-sort end bit of the composite keys (ordered.cuh) of rows of `cols` keys.
int end_bit_for(int64_t cols) { return composite_end_bit(composite_column_bits(static_cast<uint64_t>(cols))); }

size_t cub_temp_bytes(int64_t chunk_rows, int64_t cols, int64_t k, bool user_labels) {
  size_t bytes = 0, more = 0;
  const int items = static_cast<int>(chunk_rows * k);
  if (!user_labels) {
    cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
    if (chunk_rows == 1)
      GKNN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, items, 0, end_bit_for(cols)));
    else
      GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeys(nullptr, bytes, keys, items, static_cast<int>(chunk_rows),
                                                            static_cast<const int*>(nullptr),
                                                            static_cast<const int*>(nullptr), 0,
                                                            end_bit_for(cols)));
    return bytes;
  }
  cub::DoubleBuffer<int64_t> labels(nullptr, nullptr);
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr);
  if (chunk_rows == 1) {
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, labels, keys, items));
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, more, keys, labels, items));
  } else {
    const int segments = static_cast<int>(chunk_rows);
    const int* none = nullptr;
    GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, bytes, labels, keys, items, segments, none, none));
    GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, more, keys, labels, items, segments, none, none));
  }
  return std::max(bytes, more);
}

Layout layout(int64_t chunk_rows, int64_t cols, int64_t k, bool user_labels) {
  Layout l;
  const size_t n = static_cast<size_t>(chunk_rows * k);
  const size_t a = user_labels ? sizeof(int64_t) : sizeof(uint64_t);  // labels, or composite keys
  l.a0 = 0;
  l.a1 = l.a0 + aligned(n * a);
  l.b0 = l.a1 + aligned(n * a);
  l.b1 = l.b0 + (user_labels ? aligned(n * sizeof(uint32_t)) : 0);  // ordered keys (user labels only)
  l.offsets = l.b1 + (user_labels ? aligned(n * sizeof(uint32_t)) : 0);
  l.temp = l.offsets + aligned(static_cast<size_t>(chunk_rows + 1) * sizeof(int));
  l.temp_bytes = cub_temp_bytes(chunk_rows, cols, k, user_labels);
  l.total = l.temp + aligned(l.temp_bytes);
  return l;
}

/// out rows [row0, row0 + gridDim.y) -> packed arrays: composite keys, or (labels, ordered keys).
__global__ void gather_kernel(const float* keys, const int64_t* labels, int64_t stride, int64_t k, int64_t label_offset,
                              bool user_labels, int column_bits, uint64_t* composite, int64_t* packed_labels,
                              uint32_t* packed_keys) {
  const int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (j >= k) return;
  const int64_t src = blockIdx.y * stride + j, dst = blockIdx.y * k + j;
  const uint32_t key = ordered_key(keys[src]);
  if (user_labels) {
    packed_labels[dst] = labels[src];
    packed_keys[dst] = key;
  } else {
    composite[dst] = composite_key(key, static_cast<uint32_t>(labels[src] - label_offset), column_bits);
  }
}

__global__ void scatter_kernel(float* keys, int64_t* labels, int64_t stride, int64_t k, int64_t label_offset,
                               bool user_labels, int column_bits, const uint64_t* composite,
                               const int64_t* packed_labels, const uint32_t* packed_keys) {
  const int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (j >= k) return;
  const int64_t dst = blockIdx.y * stride + j, src = blockIdx.y * k + j;
  if (user_labels) {
    keys[dst] = key_from_ordered(packed_keys[src]);
    labels[dst] = packed_labels[src];
  } else {
    const uint64_t c = composite[src];
    keys[dst] = key_from_ordered(composite_ordered(c, column_bits));
    labels[dst] = label_offset + static_cast<int64_t>(composite_column(c, column_bits));
  }
}

}  // namespace

SortPlan plan_output_sort(int64_t rows, int64_t cols, int64_t k, bool user_labels, bool row_by_row, size_t room) {
  SortPlan p;
  const size_t per_row = static_cast<size_t>(k) * (user_labels ? 24 : 16);
  int64_t chunk = row_by_row ? 1 : static_cast<int64_t>(std::max<size_t>(1, room / per_row));
  chunk = std::min({chunk, rows, int64_t{65535}, int64_t{INT_MAX} / k});  // grid.y and CUB's int item count
  p.chunk_rows = std::max<int64_t>(chunk, 1);
  p.bytes = layout(p.chunk_rows, cols, k, user_labels).total;
  return p;
}

void sort_output(const SelectOutput& out, int64_t rows, int64_t cols, int64_t k, bool user_labels,
                 int64_t label_offset, void* ws, const SortPlan& plan, cudaStream_t stream) {
  const Layout l = layout(plan.chunk_rows, cols, k, user_labels);
  auto* base = static_cast<unsigned char*>(ws);
  auto* a0 = reinterpret_cast<uint64_t*>(base + l.a0);
  auto* a1 = reinterpret_cast<uint64_t*>(base + l.a1);
  auto* b0 = reinterpret_cast<uint32_t*>(base + l.b0);
  auto* b1 = reinterpret_cast<uint32_t*>(base + l.b1);
  auto* offsets = reinterpret_cast<int*>(base + l.offsets);
  void* temp = base + l.temp;
  const int threads = 256;
  const int column_bits = composite_column_bits(static_cast<uint64_t>(cols));
  if (plan.chunk_rows > 1) fill_segment_offsets(offsets, plan.chunk_rows, k, stream);
  for (int64_t row0 = 0; row0 < rows; row0 += plan.chunk_rows) {
    const int64_t chunk = std::min(plan.chunk_rows, rows - row0);
    const int items = static_cast<int>(chunk * k), segments = static_cast<int>(chunk);
    const dim3 grid(static_cast<unsigned>((k + threads - 1) / threads), static_cast<unsigned>(chunk));
    float* keys = out.keys + row0 * out.stride;
    int64_t* labels = out.labels + row0 * out.stride;
    auto* la0 = reinterpret_cast<int64_t*>(a0);
    auto* la1 = reinterpret_cast<int64_t*>(a1);
    gather_kernel<<<grid, threads, 0, stream>>>(keys, labels, out.stride, k, label_offset, user_labels, column_bits, a0,
                                                la0, b0);
    GKNN_CUDA_CHECK_LAUNCH();
    size_t temp_bytes = l.temp_bytes;
    const uint64_t* sorted_composite = nullptr;
    const int64_t* sorted_labels = nullptr;
    const uint32_t* sorted_keys = nullptr;
    if (!user_labels) {
      cub::DoubleBuffer<uint64_t> c(a0, a1);
      const int end_bit = composite_end_bit(column_bits);
      if (chunk == 1 && plan.chunk_rows == 1)
        GKNN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, c, items, 0, end_bit, stream));
      else
        GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeys(temp, temp_bytes, c, items, segments, offsets,
                                                              offsets + 1, 0, end_bit, stream));
      sorted_composite = c.Current();
    } else {
      // By label first, then stable by key: equal keys stay in label order (the total order).
      cub::DoubleBuffer<int64_t> lab(la0, la1);
      cub::DoubleBuffer<uint32_t> key(b0, b1);
      if (chunk == 1 && plan.chunk_rows == 1) {
        GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, lab, key, items, 0, 64, stream));
        temp_bytes = l.temp_bytes;
        GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, key, lab, items, 0, 32, stream));
      } else {
        GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(temp, temp_bytes, lab, key, items, segments, offsets,
                                                               offsets + 1, 0, 64, stream));
        temp_bytes = l.temp_bytes;
        GKNN_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairs(temp, temp_bytes, key, lab, items, segments, offsets,
                                                               offsets + 1, 0, 32, stream));
      }
      sorted_labels = lab.Current();
      sorted_keys = key.Current();
    }
    scatter_kernel<<<grid, threads, 0, stream>>>(keys, labels, out.stride, k, label_offset, user_labels,
                                                 column_bits, sorted_composite, sorted_labels, sorted_keys);
    GKNN_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace gknn::detail::cuda::large_k
