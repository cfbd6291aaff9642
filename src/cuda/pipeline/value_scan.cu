// value_scan.cu: the value facts of a device view, scanned where it lives (core/backend.hpp device_value_stats).
//
// The host scan (core/validate.cpp) gives host inputs their facts (finite, integral, nonnegative, max |v|: which
// exact lower-precision paths Auto may take). A device view gets the same facts from this one reduction, with the
// per-value definition shared with the host (core/value_facts.hpp), so a base gets the same plan and the same
// NaN/Inf error wherever it lives. One warp per row (lanes read consecutive columns, coalesced, any row stride),
// rows grid-strided, a shuffle reduction per warp and one set of atomics per warp (into words cleared by a memset);
// then one 24-byte copy back.
// The first non-finite row (smallest index) is copied to the host and named as the host scan names it.
// select_k's NaN check of a device view (device_reject_nan) is the same kernel with a row bad when it holds a NaN
// (infinities are valid keys there). ChunkedValueScan (value_scan.cuh) runs it per chunk of an upload into one result.
#include <memory>
#include <optional>
#include <vector>

#include "core/backend.hpp"
#include "core/validate.hpp"
#include "core/value_facts.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/device_scope.cuh"
#include "cuda/common/error.cuh"
#include "cuda/common/idle_pool.hpp"
#include "cuda/pipeline/value_scan.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kBlocksPerSm = 8;  // 2048 threads per SM: enough loads in flight for the memory bandwidth

struct ScanResult {
  unsigned long long bad_rank;  ///< rows - (first non-finite row), max-reduced; 0 when every value is finite
  unsigned int fraction, negative, max_abs_bits;
};

/// kNanOnly: a row is bad when it holds a NaN (select_k takes infinities), else when it holds a non-finite value.
/// Rows [0, count) at `rows` are rows first_row.. of `total` (a chunk of an upload, value_scan.cuh): bad_rank
/// counts from the end of the whole, so the smallest bad row of every chunk wins the max.
template <bool kNanOnly>
__global__ void value_scan_kernel(const float* __restrict__ rows, int64_t count, int64_t stride, int64_t cols,
                                  int64_t first_row, int64_t total, ScanResult* __restrict__ out) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  ValueBits facts;
  unsigned long long bad_rank = 0;
  // Every lane of a warp runs the same rows, so the shuffles below see the whole warp.
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; r < count; r += warps) {
    const float* x = rows + r * stride;
    ValueBits row;
    bool nan = false;
    for (int64_t c = lane; c < cols; c += 32) {
      row.add(x[c]);
      if constexpr (kNanOnly) nan |= isnan(x[c]);
    }
    const bool bad = kNanOnly ? nan : !row.finite();
    if (bad && bad_rank == 0) bad_rank = static_cast<unsigned long long>(total - (first_row + r));  // rows ascend
    facts.merge(row);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    ValueBits other;
    other.fraction = __shfl_xor_sync(0xffffffffu, facts.fraction, offset);
    other.negative = __shfl_xor_sync(0xffffffffu, facts.negative, offset);
    other.max_abs_bits = __shfl_xor_sync(0xffffffffu, facts.max_abs_bits, offset);
    facts.merge(other);
    bad_rank = max(bad_rank, __shfl_xor_sync(0xffffffffu, bad_rank, offset));
  }
  if (lane != 0) return;
  if (facts.fraction) atomicOr(&out->fraction, 1u);
  if (facts.negative) atomicOr(&out->negative, 1u);
  atomicMax(&out->max_abs_bits, facts.max_abs_bits);
  if (bad_rank != 0) atomicMax(&out->bad_rank, bad_rank);
}

/// A stream and the result's device and pinned words, per device; leased by one scan at a time. The stream is a
/// blocking one: the scan waits for work queued before it on the legacy default stream (a caller's pageable
/// cudaMemcpy may return before its DMA lands, and torch's default stream is that stream), and the search's own
/// streams start after the scan has returned to the host, so they read complete inputs too.
struct ScanSlot {
  Stream stream{cudaStreamDefault};
  DeviceBuffer<ScanResult> result{1};
  PinnedBuffer<ScanResult> host{1};
};

class SlotLease {
 public:
  explicit SlotLease(int device) : device_(device) {
    if (std::optional<std::unique_ptr<ScanSlot>> idle = idle_pool<std::unique_ptr<ScanSlot>>().take(device))
      slot_ = std::move(*idle);
    else
      slot_ = std::make_unique<ScanSlot>();  // the current device is `device`: its stream and memory
  }
  ~SlotLease() { idle_pool<std::unique_ptr<ScanSlot>>().give(device_, slot_); }
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  ScanSlot& operator*() const { return *slot_; }

 private:
  int device_;
  std::unique_ptr<ScanSlot> slot_;
};

}  // namespace

void release_scan_slots() {
  idle_pool<std::unique_ptr<ScanSlot>>().drain();  // the destructors free the streams and buffers
}

namespace {

int64_t max_scan_blocks(int device) { return int64_t(device_props(device).sm_count) * kBlocksPerSm; }

template <bool kNanOnly>
void launch_scan(const float* rows, int64_t count, int64_t stride, int64_t cols, int64_t first_row, int64_t total,
                 int64_t max_blocks, ScanResult* out, cudaStream_t s) {
  const int64_t row_blocks = (count + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t blocks = std::min<int64_t>(row_blocks, max_blocks);
  value_scan_kernel<kNanOnly><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, s>>>(
      rows, count, stride, cols, first_row, total, out);
  GKNN_CUDA_CHECK_LAUNCH();
}

/// One scan of a device view (m.rows > 0, CUDA available); the first bad row, if any, is copied into *bad_row.
template <bool kNanOnly>
ScanResult scan(FloatView m, std::string_view what, std::vector<float>* bad_row) {
  const auto [device, rows] = device_address(m.data, what);
  DeviceScope scope(device);
  SlotLease lease(device);
  ScanSlot& slot = *lease;
  const cudaStream_t s = slot.stream.get();
  GKNN_CUDA_TRY(cudaMemsetAsync(slot.result.data(), 0, sizeof(ScanResult), s));
  launch_scan<kNanOnly>(rows, m.rows, m.row_stride(), m.cols, 0, m.rows, max_scan_blocks(device), slot.result.data(),
                        s);
  GKNN_CUDA_TRY(cudaMemcpyAsync(slot.host.data(), slot.result.data(), sizeof(ScanResult), cudaMemcpyDeviceToHost, s));
  GKNN_CUDA_TRY(cudaStreamSynchronize(s));
  const ScanResult r = *slot.host.data();
  if (r.bad_rank != 0) {
    const int64_t bad = m.rows - static_cast<int64_t>(r.bad_rank);
    bad_row->resize(static_cast<size_t>(m.cols));
    GKNN_CUDA_TRY(cudaMemcpy(bad_row->data(), rows + bad * m.row_stride(), bad_row->size() * sizeof(float),
                             cudaMemcpyDeviceToHost));
  }
  return r;
}

}  // namespace

ValueStats device_value_stats(FloatView m, std::string_view what) {
  if (m.rows == 0) return ValueStats{};  // as the host scan: no value, every fact holds
  if (!available()) return ValueStats{false, false, 0.f, false};  // the backend's dispatch gives the error
  std::vector<float> row;
  const ScanResult r = scan<false>(m, what, &row);
  if (r.bad_rank != 0) reject_non_finite_row(row.data(), m.cols, what, m.rows - static_cast<int64_t>(r.bad_rank));
  ValueBits facts;
  facts.fraction = r.fraction;
  facts.negative = r.negative;
  facts.max_abs_bits = r.max_abs_bits;
  return ValueStats{facts.integral(), facts.nonnegative(), facts.max_abs(), true};
}

struct ChunkedValueScan::Impl {
  int device = 0;
  int64_t max_blocks = 0;
  cudaStream_t stream = nullptr;
  int64_t total = 0, cols = 0;
  std::optional<SlotLease> lease;
};

ChunkedValueScan::ChunkedValueScan(int64_t total, int64_t cols, cudaStream_t s) : impl_(std::make_unique<Impl>()) {
  GKNN_CUDA_TRY(cudaGetDevice(&impl_->device));
  impl_->total = total;
  impl_->cols = cols;
  impl_->stream = s;
  impl_->max_blocks = max_scan_blocks(impl_->device);
  impl_->lease.emplace(impl_->device);
  GKNN_CUDA_TRY(cudaMemsetAsync((**impl_->lease).result.data(), 0, sizeof(ScanResult), s));
}

// The slot goes back to the pool only once `s` is idle: on an error path a kernel of `s` may still write its result
// words, which the next lease clears on another stream.
ChunkedValueScan::~ChunkedValueScan() { GKNN_CUDA_TRY_NOTHROW(cudaStreamSynchronize(impl_->stream)); }

void ChunkedValueScan::add(const float* rows, int64_t first_row, int64_t count, int64_t stride, cudaStream_t s) {
  if (count <= 0) return;
  launch_scan<false>(rows, count, stride, impl_->cols, first_row, impl_->total, impl_->max_blocks,
                     (**impl_->lease).result.data(), s);
}

void ChunkedValueScan::fetch(cudaStream_t s) {
  ScanSlot& slot = **impl_->lease;
  GKNN_CUDA_TRY(cudaMemcpyAsync(slot.host.data(), slot.result.data(), sizeof(ScanResult), cudaMemcpyDeviceToHost, s));
}

ValueStats ChunkedValueScan::finish(const float* rows, int64_t stride, std::string_view what) {
  const ScanResult r = *(**impl_->lease).host.data();
  if (r.bad_rank != 0) {
    const int64_t bad = impl_->total - static_cast<int64_t>(r.bad_rank);
    std::vector<float> row(static_cast<size_t>(impl_->cols));
    GKNN_CUDA_TRY(cudaMemcpy(row.data(), rows + bad * stride, row.size() * sizeof(float), cudaMemcpyDeviceToHost));
    reject_non_finite_row(row.data(), impl_->cols, what, bad);
  }
  ValueBits facts;
  facts.fraction = r.fraction;
  facts.negative = r.negative;
  facts.max_abs_bits = r.max_abs_bits;
  return ValueStats{facts.integral(), facts.nonnegative(), facts.max_abs(), true};
}

void device_reject_nan(FloatView m, std::string_view what) {
  if (m.rows == 0 || !available()) return;  // nothing to read, or the backend's dispatch gives the error
  std::vector<float> row;
  const ScanResult r = scan<true>(m, what, &row);
  if (r.bad_rank != 0) reject_nan_row(row.data(), m.cols, what, m.rows - static_cast<int64_t>(r.bad_rank));
}

}  // namespace gknn::detail::cuda
