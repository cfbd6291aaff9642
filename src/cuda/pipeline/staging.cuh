// staging.cuh: host rows -> device through two pinned slots, overlapping the copies with compute.
//
// The user's host memory is pageable, so an asynchronous copy from it would not overlap anything. Each tile is
// first packed (rows made contiguous) into a pinned slot by the host, then copied on the copy stream; the
// consumer stream waits on the copy's `ready` event. Slots alternate: while the consumer computes on tile i,
// the host packs tile i+1 into the other slot. Before a slot is packed again the host waits on its `free`
// event, recorded on the consumer after the last work that reads the tile (release()), which also implies the
// slot's earlier copy has finished.
//
// A Stager<uint8_t, float> packs float rows whose values are all integers of a byte's range as bytes (a quarter of
// the bytes to copy; the caller expands them on the device, query_bytes.cuh).
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <type_traits>

#include "cuda/common/buffer.cuh"
#include "core/chunk_pack.hpp"
#include "core/env_switch.hpp"
#include "core/host_parallel.hpp"
#include "cuda/pipeline/stage_timer.cuh"
#include "gknn/types.hpp"

namespace gknn::detail::cuda {

/// The pinned and device buffers of a Stager's two slots; a Pipeline keeps one per stream of rows, so repeated
/// searches allocate nothing (buffers only grow).
template <class T>
struct StagingSlots {
  struct Slot {
    PinnedBuffer<T> pinned;
    DeviceBuffer<T> device;
    Event ready{cudaEventDisableTiming};
    Event free{cudaEventDisableTiming};
    bool used = false;
  };
  Slot slots[2];
  int next = 0, last = 0;
  /// Pinned plus device bytes held.
  size_t bytes() const {
    size_t n = 0;
    for (const Slot& s : slots) n += s.pinned.size() * sizeof(T) + s.device.capacity_bytes();
    return n;
  }
  /// Frees both slots' buffers (the caller has synchronised every stream that used them).
  void release() {
    for (Slot& s : slots) {
      s.pinned = PinnedBuffer<T>();
      s.device = DeviceBuffer<T>();
      s.used = false;
    }
  }
};

template <class T, class Src = T>
class Stager {
  /// Packs floats as bytes (pack_rows_as_bytes) rather than copying the rows as they are.
  static constexpr bool kBytes = !std::is_same_v<T, Src>;
  static_assert(!kBytes || (std::is_same_v<T, uint8_t> && std::is_same_v<Src, float>),
                "a converting Stager packs float rows as bytes");

 public:
  /// Source: rows of `cols` elements, `host_stride` apart; tiles of at most `max_rows` rows. `slots` (kept by the
  /// caller across searches) or, when null, slots of its own. `signed_bytes`: a byte Stager's bytes are int8.
  Stager(const Src* host, int64_t host_stride, int64_t cols, int64_t max_rows, cudaStream_t copy_stream,
         StageTimer* timer, StagingSlots<T>* slots = nullptr, bool signed_bytes = false)
      : host_(host), host_stride_(host_stride), cols_(cols), max_rows_(max_rows), copy_(copy_stream), timer_(timer),
        own_(slots ? nullptr : std::make_unique<StagingSlots<T>>()), s_(slots ? *slots : *own_),
        signed_bytes_(signed_bytes) {
    // A previous search ended synchronised. Every search starts at slot 0: a one-tile search that went on from where
    // the last one stopped used the other slot on every second call, which grew that slot's pinned and device
    // buffers on the second of two identical searches (H100, 2026-11-26: 262144 bytes for 2048 x 32 queries).
    for (auto& slot : s_.slots) slot.used = false;
    s_.next = 0;
  }

  /// Uploads rows [begin, begin + count) into the slot's own device buffer (row stride = cols).
  const T* upload(int64_t begin, int64_t count, cudaStream_t consumer) {
    if constexpr (!kBytes) {
      if (host_stride_ == cols_ && copy_per_part()) {  // contiguous rows: each part's copy issued once it is packed
        Slot& slot = take_slot(count);
        slot.device.resize(static_cast<size_t>(max_rows_ * cols_));
        pack_and_send(slot, slot.device.data(), begin, count, consumer);
        return slot.device.data();
      }
    }
    auto& slot = pack(begin, count);
    slot.device.resize(static_cast<size_t>(max_rows_ * cols_));
    send(slot, slot.device.data(), count, consumer);
    return slot.device.data();
  }
  /// Uploads rows [begin, begin + count) to `dst` (device, row stride = cols).
  void upload_into(T* dst, int64_t begin, int64_t count, cudaStream_t consumer) {
    send(pack(begin, count), dst, count, consumer);
  }
  /// Work enqueued so far on `consumer` is the last to read the latest upload.
  void release(cudaStream_t consumer) { s_.slots[s_.last].free.record(consumer); }
  /// The slot (0 or 1) of the latest upload.
  int last_slot() const { return s_.last; }
  /// A byte Stager's bytes are int8 (else uint8).
  bool signed_bytes() const { return signed_bytes_; }

 private:
  using Slot = typename StagingSlots<T>::Slot;

  /// GKNN_QUERY_UPLOAD_PER_PART set (not "0"): contiguous tiles go up part by part as the host team packs them
  /// (pack_and_send), to measure against one copy after the whole pack (Garcia's shape: ~100 us of pack, then
  /// ~105 us of copy before its kernel). Off by default until measured.
  static bool copy_per_part() {
    static const bool on = env_switch_on("GKNN_QUERY_UPLOAD_PER_PART");
    return on;
  }

  /// The next slot, free to be written (its last reader done), with room for a tile.
  Slot& take_slot(int64_t count) {
    GKNN_EXPECT(count <= max_rows_, ErrorCode::Internal, "staging: tile of ", count, " rows exceeds ", max_rows_);
    s_.last = s_.next;
    s_.next = 1 - s_.next;
    Slot& slot = s_.slots[s_.last];
    if (slot.used) GKNN_CUDA_TRY(cudaEventSynchronize(slot.free.get()));
    slot.used = true;
    const size_t need = static_cast<size_t>(max_rows_ * cols_);
    if (slot.pinned.size() < need) slot.pinned = PinnedBuffer<T>(need);
    return slot;
  }

  /// Rows [begin, begin + count) into the next slot's pinned bytes.
  Slot& pack(int64_t begin, int64_t count) {
    Slot& slot = take_slot(count);
    const HostWorkScope timed(timer_, HostWork::Pack);
    if constexpr (kBytes) {
      pack_rows_as_bytes(host_ + begin * host_stride_, host_stride_, count, cols_, signed_bytes_, slot.pinned.data());
    } else if (host_stride_ == cols_) {  // contiguous rows: one copy, split over threads (one thread reaches a
                                         // fraction of the host bandwidth, and bulk uploads are bound by this copy)
      parallel_memcpy(slot.pinned.data(), host_ + begin * cols_, static_cast<size_t>(count * cols_) * sizeof(T));
    } else {
      const HostRows rows{host_, begin + count, static_cast<size_t>(cols_) * sizeof(T),
                          static_cast<size_t>(host_stride_) * sizeof(T)};
      copy_rows(reinterpret_cast<unsigned char*>(slot.pinned.data()), rows, begin, count);
    }
    return slot;
  }

  /// Contiguous rows [begin, begin + count) packed by the host team (parallel_memcpy), each part's copy to `dst`
  /// issued on the copy stream by the thread that packed it, as soon as it is packed.
  void pack_and_send(Slot& slot, T* dst, int64_t begin, int64_t count, cudaStream_t consumer) {
    int device = 0;
    GKNN_CUDA_TRY(cudaGetDevice(&device));
    std::mutex failed_mutex;
    cudaError_t failed = cudaSuccess;
    auto* to = reinterpret_cast<unsigned char*>(dst);
    auto* pinned = reinterpret_cast<unsigned char*>(slot.pinned.data());
    stage_begin(timer_, Stage::Upload, copy_);
    const HostWorkScope timed(timer_, HostWork::Pack);  // the copies are issued inside it
    parallel_memcpy(pinned, host_ + begin * cols_, static_cast<size_t>(count * cols_) * sizeof(T),
                    [&](size_t b, size_t e) {  // on a pool thread: the device set here, an error kept, none thrown
                      cudaError_t err = cudaSetDevice(device);
                      if (err == cudaSuccess)
                        err = cudaMemcpyAsync(to + b, pinned + b, e - b, cudaMemcpyHostToDevice, copy_);
                      if (err != cudaSuccess) {
                        std::lock_guard<std::mutex> lock(failed_mutex);
                        failed = err;
                      }
                    });
    stage_end(timer_, Stage::Upload, copy_);
    GKNN_CUDA_TRY(failed);
    slot.ready.record(copy_);
    GKNN_CUDA_TRY(cudaStreamWaitEvent(consumer, slot.ready.get(), 0));
  }

  void send(Slot& slot, T* dst, int64_t count, cudaStream_t consumer) {
    stage_begin(timer_, Stage::Upload, copy_);
    GKNN_CUDA_TRY(cudaMemcpyAsync(dst, slot.pinned.data(), static_cast<size_t>(count * cols_) * sizeof(T),
                                  cudaMemcpyHostToDevice, copy_));
    stage_end(timer_, Stage::Upload, copy_);
    slot.ready.record(copy_);
    GKNN_CUDA_TRY(cudaStreamWaitEvent(consumer, slot.ready.get(), 0));
  }

  const Src* host_;
  int64_t host_stride_, cols_, max_rows_;
  cudaStream_t copy_;
  StageTimer* timer_;
  std::unique_ptr<StagingSlots<T>> own_;
  StagingSlots<T>& s_;
  bool signed_bytes_;
};

}  // namespace gknn::detail::cuda
