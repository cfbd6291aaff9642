// result_writer.cu: see result_writer.cuh.
#include <algorithm>
#include <chrono>

#include "core/finalize.hpp"
#include "core/host_parallel.hpp"
#include "cuda/common/device_scope.cuh"
#include "cuda/pipeline/result_memory.cuh"
#include "cuda/pipeline/result_writer.cuh"

namespace gknn::detail::cuda {

namespace {
/// Results above this size are allocated on a helper thread while the device computes.
constexpr size_t kAheadBytes = size_t(4) << 20;
/// Bytes a part of the copy-out at least (parallel_memcpy's default is 512 KiB).
constexpr size_t kCopyOutPartBytes = size_t(128) << 10;
}  // namespace

ResultWriter::ResultWriter(OutputSlot* slots, int in_flight, bool device_destination,
                           std::function<ResultView()> destination, int64_t k, int64_t max_rows, int64_t rows,
                           StageTimer* timer)
    : slots_(slots), in_flight_(std::clamp(in_flight, 1, kOutputSlots)), device_(device_destination),
      destination_(std::move(destination)), k_(k), max_rows_(max_rows), timer_(timer) {
  for (int s = 0; s < kOutputSlots; ++s) slots_[s].pending = false;
  if (device_) return;
  register_page_locked_results();
  int device = 0;
  GKNN_CUDA_TRY(cudaGetDevice(&device));
  destination_ = [make = std::move(destination_), device] {
    // On whichever thread makes it; the search's device current there, so that a page-locked block is allocated
    // in its context (a helper thread's default, device 0, would be initialised for it otherwise).
    const DeviceScope on(device);
    const PageLockedResults scope;
    return make();
  };
  // Kept page-locked blocks make the destination at once (at the first commit); else a large one is made on a
  // helper thread meanwhile.
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(k);
  if (n * 12 > kAheadBytes && !page_locked_result_kept(n)) ahead_ = std::async(std::launch::async, destination_);
}

ResultWriter::~ResultWriter() {
  if (ahead_.valid()) ahead_.wait();  // never leave the helper writing into a destroyed result
  // A search that threw after a commit: its copies land before the destination or the slots can be reused.
  for (int s = 0; s < in_flight_; ++s)
    if (slots_[s].pending) GKNN_CUDA_TRY_NOTHROW(cudaEventSynchronize(slots_[s].done[slots_[s].chunks - 1].get()));
}

bool ResultWriter::dest_ready() {
  return have_dest_ || !ahead_.valid() || ahead_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

int ResultWriter::oldest_pending() const {
  int oldest = -1;
  for (int s = 0; s < in_flight_; ++s)
    if (slots_[s].pending && (oldest < 0 || slots_[s].row0 < slots_[oldest].row0)) oldest = s;
  return oldest;
}

void ResultWriter::land_ready(const std::function<void(int64_t)>& landed) {
  for (int s = oldest_pending(); s >= 0 && dest_ready(); s = oldest_pending()) {
    const cudaError_t state = cudaEventQuery(slots_[s].done[slots_[s].chunks - 1].get());
    if (state == cudaErrorNotReady) break;
    GKNN_CUDA_TRY(state);
    landed(finish(s));
  }
}

void ResultWriter::finish_all(const std::function<void(int64_t)>& landed) {
  for (int s = oldest_pending(); s >= 0; s = oldest_pending()) landed(finish(s));
}

ResultView ResultWriter::dest() {
  if (!have_dest_) {
    dest_ = ahead_.valid() ? ahead_.get() : destination_();
    have_dest_ = true;
  }
  return dest_;
}

bool ResultWriter::direct() {
  if (direct_ < 0 && dest_ready()) {
    const ResultView d = dest();
    direct_ = page_locked(d.distances) && page_locked(d.indices) ? 1 : 0;
  }
  return direct_ == 1;
}

ResultWriter::Target ResultWriter::target(int slot, int64_t row0) {
  if (device_) {
    const ResultView d = dest();
    return {d.distances + row0 * k_, d.indices + row0 * k_};
  }
  OutputSlot& s = slots_[slot];
  const size_t need = static_cast<size_t>(max_rows_ * k_);
  s.values.resize(need);
  s.indices.resize(need);
  return {s.values.data(), s.indices.data()};
}

void ResultWriter::commit(int slot, int64_t row0, int64_t rows, cudaStream_t compute, cudaStream_t copy_stream) {
  if (device_) return;
  OutputSlot& s = slots_[slot];
  const cudaStream_t stream = copy_stream ? copy_stream : compute;
  if (copy_stream) {
    s.ready.record(compute);
    GKNN_CUDA_TRY(cudaStreamWaitEvent(copy_stream, s.ready.get(), 0));
  }
  s.row0 = row0;
  s.rows = rows;
  s.direct = direct();
  const size_t n = static_cast<size_t>(rows * k_);
  if (s.direct) {  // into the destination's rows: finish() only waits
    const ResultView d = dest();
    const size_t at = static_cast<size_t>(row0 * k_);
    stage_begin(timer_, Stage::Download, stream);
    GKNN_CUDA_TRY(cudaMemcpyAsync(d.distances + at, s.values.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    GKNN_CUDA_TRY(cudaMemcpyAsync(d.indices + at, s.indices.data(), n * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    s.chunks = 1;
    s.done[0].record(stream);
    stage_end(timer_, Stage::Download, stream);
    s.pending = true;
    return;
  }
  const size_t need = static_cast<size_t>(max_rows_ * k_);
  if (s.pinned_values.size() < need) s.pinned_values = PinnedBuffer<float>(need);
  if (s.pinned_indices.size() < need) s.pinned_indices = PinnedBuffer<int64_t>(need);
  const int chunks = n * 12 < kCopyChunkMinBytes ? 1 : static_cast<int>(std::min<int64_t>(kCopyChunks, rows));
  s.chunk_rows = (rows + chunks - 1) / chunks;
  s.chunks = static_cast<int>((rows + s.chunk_rows - 1) / s.chunk_rows);
  stage_begin(timer_, Stage::Download, stream);
  for (int c = 0; c < s.chunks; ++c) {
    const size_t at = static_cast<size_t>(c * s.chunk_rows * k_),
                 count = static_cast<size_t>(std::min(s.chunk_rows, rows - c * s.chunk_rows) * k_);
    GKNN_CUDA_TRY(cudaMemcpyAsync(s.pinned_values.data() + at, s.values.data() + at, count * sizeof(float),
                                  cudaMemcpyDeviceToHost, stream));
    GKNN_CUDA_TRY(cudaMemcpyAsync(s.pinned_indices.data() + at, s.indices.data() + at, count * sizeof(int64_t),
                                  cudaMemcpyDeviceToHost, stream));
    s.done[c].record(stream);
  }
  stage_end(timer_, Stage::Download, stream);
  s.pending = true;
}

int64_t ResultWriter::finish(int slot) {
  OutputSlot& s = slots_[slot];
  if (!s.pending) return 0;
  s.pending = false;
  if (s.direct) {
    GKNN_CUDA_TRY(cudaEventSynchronize(s.done[0].get()));
    return s.rows;
  }
  const ResultView d = dest();  // allocated while the device works on the tile
  for (int c = 0; c < s.chunks; ++c) {  // chunk c is copied out while chunk c + 1 is still on its way
    GKNN_CUDA_TRY(cudaEventSynchronize(s.done[c].get()));
    const size_t from = static_cast<size_t>(c * s.chunk_rows * k_), at = static_cast<size_t>(s.row0 * k_) + from,
                 n = static_cast<size_t>(std::min(s.chunk_rows, s.rows - c * s.chunk_rows) * k_);
    // After the last chunk's download nothing else is left to overlap: parts of 128 KiB (Garcia's 0.8 MB result
    // went out on one thread per array, ~86 us after its download in a profiled trace, H200).
    // Both arrays as one job: the pool's threads are woken once (Garcia: 0.04 ms for 0.8 MB on the H100 in two).
    const HostWorkScope timed(timer_, HostWork::CopyOut);
    const CopyRange ranges[2] = {{d.distances + at, s.pinned_values.data() + from, n * sizeof(float)},
                                 {d.indices + at, s.pinned_indices.data() + from, n * sizeof(int64_t)}};
    parallel_memcpy_ranges(ranges, 2, kCopyOutPartBytes);
  }
  return s.rows;
}

}  // namespace gknn::detail::cuda
