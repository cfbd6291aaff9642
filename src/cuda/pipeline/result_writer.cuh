// result_writer.cuh: where a search's finalised query tiles go, written once into the caller's storage.
//
// Device destination: the finalise kernel writes straight into it. Host destination: the kernel writes a
// device tile, which is copied to a pinned slot behind the tile's compute (in row chunks, kCopyChunks); the host
// moves it into the caller's array (several threads, chunk by chunk as they arrive) when the slot is needed again, earlier when the tile is already complete between two
// tiles' launches (land_ready), or at the end, so that the copy-out of tile i overlaps the device work of the
// tiles after it. Up to kOutputSlots tiles are in flight (output_slots.hpp). A large host destination is asked for on a helper thread as soon as the
// search starts (a Result's arrays are allocated, and their pages touched, while the device computes); a small one
// at the first copy-out, when a thread would cost more than the allocation.
// A destination in page-locked memory (a Result of the process's page-locked blocks, result_memory.cuh, or a
// caller's own pinned arrays) gets each tile copied from the device straight into its rows: no pinned slot, no
// copy-out. Results are asked for inside a PageLockedResults scope, so they come from those blocks where they can.
#pragma once

#include <functional>
#include <future>

#include "cuda/common/buffer.cuh"
#include "cuda/pipeline/output_slots.hpp"
#include "cuda/pipeline/stage_timer.cuh"
#include "gknn/types.hpp"

namespace gknn::detail::cuda {

/// A tile's copy to its pinned slot is cut into up to this many row chunks, each with its own event, so that the
/// host copies chunk c out while chunk c + 1 is still on its way: the last tile, which nothing overlaps, then
/// costs its device -> host copy plus one chunk's host copy, not plus the whole tile's.
constexpr int kCopyChunks = 4;
/// Tiles below this size (values + indices) are copied in one piece (a copy and an event each chunk).
constexpr size_t kCopyChunkMinBytes = size_t(4) << 20;

/// Buffers of one in-flight output tile, kept by the Pipeline between searches.
struct OutputSlot {
  DeviceBuffer<float> values;
  DeviceBuffer<int64_t> indices;
  PinnedBuffer<float> pinned_values;
  PinnedBuffer<int64_t> pinned_indices;
  Event done[kCopyChunks] = {Event(cudaEventDisableTiming), Event(cudaEventDisableTiming),
                             Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};
  Event ready{cudaEventDisableTiming};  ///< the tile finalised on its stream, for a copy on another one
  int64_t row0 = 0, rows = 0;
  int64_t chunk_rows = 0;  ///< rows per chunk of the pending tile's copy (the last chunk may hold fewer)
  int chunks = 0;          ///< chunks of the pending tile's copy; done[chunks - 1] completes the tile
  bool pending = false;
  bool direct = false;     ///< the pending tile is copied straight into the destination (page-locked)
};
static_assert(kCopyChunks == 4, "OutputSlot::done lists kCopyChunks events");

class ResultWriter {
 public:
  /// k: the user's k (row length of the destination); device_destination: where the caller's storage lives.
  /// rows: the whole result's rows (decides whether the destination is asked for ahead, on a helper thread).
  /// slots: the pipeline's kOutputSlots slots, of which the search uses `in_flight` (tile i: slot i % in_flight).
  ResultWriter(OutputSlot* slots, int in_flight, bool device_destination, std::function<ResultView()> destination,
               int64_t k, int64_t max_rows, int64_t rows, StageTimer* timer);
  ~ResultWriter();

  struct Target {
    float* values;
    int64_t* indices;
  };
  /// Where tile rows [row0, row0 + rows) are to be finalised (after finish(slot) freed the slot).
  Target target(int slot, int64_t row0);
  /// The tile in the slot is complete on `compute`: enqueue its copy-out, on `copy_stream` where given (after the
  /// tile: an event), so that it overlaps the next tile's kernels on `compute`, else on `compute`. The slot is written
  /// again only after finish() waited for the copy, so no other ordering is needed.
  void commit(int slot, int64_t row0, int64_t rows, cudaStream_t compute, cudaStream_t copy_stream = nullptr);
  /// Lands the slot's pending tile in the caller's storage (waits for its copy); returns rows landed.
  int64_t finish(int slot);
  /// Lands, oldest first, the pending tiles whose copies are complete, while the destination is ready (never
  /// waits); calls landed(rows) for each tile.
  void land_ready(const std::function<void(int64_t)>& landed);
  /// Lands every pending tile, oldest first; calls landed(rows) for each tile.
  void finish_all(const std::function<void(int64_t)>& landed);
  int slots_in_flight() const { return in_flight_; }

 private:
  ResultView dest();
  bool dest_ready();
  /// Whether tiles go straight into the destination: decided once the destination is there (until then, staged).
  bool direct();
  int oldest_pending() const;
  OutputSlot* slots_;
  int in_flight_;
  bool device_;
  std::function<ResultView()> destination_;
  std::future<ResultView> ahead_;
  ResultView dest_{};
  bool have_dest_ = false;
  int direct_ = -1;  ///< direct(): -1 not known yet, else 0 / 1
  int64_t k_, max_rows_;
  StageTimer* timer_;
};

}  // namespace gknn::detail::cuda
