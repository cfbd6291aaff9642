// buffer.cuh: RAII owners of device memory (cudaMalloc'd, or kept for reuse when freed), pinned host
// memory, streams and events (no managed memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "cuda/common/error.cuh"

namespace gknn::detail::cuda {

/// Counts the bytes every DeviceBuffer holds (`delta` > 0: allocated, < 0: freed), process-wide, for the hooks
/// device_buffer_bytes / device_buffer_peak_bytes (cuda/hooks.hpp): tests see what gknn itself allocates, which
/// cudaMemGetInfo cannot tell apart from other processes and from compute-sanitizer's own allocations.
void count_device_bytes(int64_t delta) noexcept;

/// cudaMalloc of `bytes` (> 0). Where it fails for want of memory, the kept blocks (PooledDeviceMemory) are
/// freed (trim_device_pools) and it is tried once more before the OutOfMemory error (throw_device_allocation):
/// memory gknn keeps never makes one of its allocations fail.
void* allocate_device(size_t bytes);

/// How a DeviceBuffer gets its memory: cudaMalloc / cudaFree (cudaFree waits for the whole device).
struct PlainDeviceMemory {
  void* allocate(size_t bytes) { return allocate_device(bytes); }
  void free(void* p) noexcept { GKNN_CUDA_TRY_NOTHROW(cudaFree(p)); }
};

/// cudaMalloc'd, but kept when freed (up to 8 blocks a process) and handed to the next allocation of about the
/// same size on its device, which then takes microseconds instead of a cudaMalloc's milliseconds; for the resident
/// Index's rows, norms and operand copy (pipeline/resident.cu), which an add makes beside its first copies and
/// which a freed Index gives back. The H200 upload timeline (bench/results/upload_timeline_2026-11-27_h200.md): the
/// 512 MB cudaMalloc of a 1M x 128 add took 0.8-2 ms, its first chunks waited in device slots meanwhile, and the
/// uint8 add's copies stalled 0.8 ms for it. (A stream-ordered pool, cudaMallocFromPoolAsync, did the same for later
/// adds but made the process's first add 10 ms slower: its first 512 MB took 14.8 ms.) Freed, a block waits for
/// the whole device first, as cudaFree does, so that no work still reads it when it is handed out again.
/// GKNN_INDEX_POOL=0 (read once; core/env_switch.hpp): plain cudaMalloc / cudaFree.
struct PooledDeviceMemory {
  int device = -1;   ///< the device of the block; -1: plain cudaMalloc (freed at once)
  size_t bytes = 0;  ///< the block's size (a kept block may be up to a quarter larger than asked for)
  void* allocate(size_t bytes);
  void free(void* p) noexcept;
};

/// Frees every kept block (PooledDeviceMemory): before an allocation that failed for want of memory is retried,
/// and in release_upload_slots (pipeline/upload.cuh), gknn's call that frees what it keeps.
void trim_device_pools() noexcept;
/// Bytes of the blocks kept for `device`: free memory that cudaMemGetInfo does not count, added to it by
/// device_memory (device.cuh) so that plans are not shrunk by the kept blocks.
size_t pooled_idle_bytes(int device) noexcept;

/// Array of T from `Memory` (PlainDeviceMemory: cudaMalloc); move-only.
template <class T, class Memory = PlainDeviceMemory>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) { resize(count); }
  ~DeviceBuffer() { release(); }
  // The capacity moves with the pointer: a moved-into buffer that reported 0 held bytes was reallocated by its
  // next resize and left out of held_bytes().
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        capacity_(std::exchange(o.capacity_, 0)),
        memory_(std::exchange(o.memory_, Memory{})) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
      memory_ = std::exchange(o.memory_, Memory{});
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Discards the content; allocates only when growing.
  void resize(size_t count) {
    if (count <= capacity_) {
      size_ = count;
      return;
    }
    release();
    if (count > 0) {
      ptr_ = static_cast<T*>(memory_.allocate(count * sizeof(T)));
      count_device_bytes(static_cast<int64_t>(count * sizeof(T)));
    }
    size_ = capacity_ = count;
  }
  T* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return size_; }
  size_t bytes() const noexcept { return size_ * sizeof(T); }
  /// Bytes held (the largest size asked for since the last release).
  size_t capacity_bytes() const noexcept { return capacity_ * sizeof(T); }

 private:
  void release() noexcept {
    if (ptr_) {
      memory_.free(ptr_);
      count_device_bytes(-static_cast<int64_t>(capacity_ * sizeof(T)));
    }
    ptr_ = nullptr;
    size_ = capacity_ = 0;
  }
  T* ptr_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  [[no_unique_address]] Memory memory_{};  // PlainDeviceMemory takes no room
};

/// A DeviceBuffer from gknn's device pool (PooledDeviceMemory).
template <class T>
using PooledDeviceBuffer = DeviceBuffer<T, PooledDeviceMemory>;

/// How a PinnedBuffer gets its memory: cudaMallocHost / cudaFreeHost (pinned_pool.cuh: PooledPinnedMemory keeps it).
struct PlainPinnedMemory {
  void* allocate(size_t bytes) {
    void* p = nullptr;
    GKNN_CUDA_TRY(cudaMallocHost(&p, bytes));
    return p;
  }
  void free(void* p) noexcept { GKNN_CUDA_TRY_NOTHROW(cudaFreeHost(p)); }
};

/// Page-locked array of T from `Memory` (for asynchronous copies); move-only.
template <class T, class Memory = PlainPinnedMemory>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t count) : size_(count) {
    if (count > 0) ptr_ = static_cast<T*>(memory_.allocate(count * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (ptr_) memory_.free(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)), memory_(std::move(o.memory_)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    std::swap(memory_, o.memory_);
    return *this;
  }
  T* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return size_; }

 private:
  T* ptr_ = nullptr;
  size_t size_ = 0;
  [[no_unique_address]] Memory memory_{};  // PlainPinnedMemory takes no room
};

class Stream {
 public:
  /// Non-blocking by default (no implicit synchronisation with the legacy default stream).
  explicit Stream(unsigned flags = cudaStreamNonBlocking) { GKNN_CUDA_TRY(cudaStreamCreateWithFlags(&s_, flags)); }
  ~Stream() {
    if (s_) GKNN_CUDA_TRY_NOTHROW(cudaStreamDestroy(s_));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return s_; }
  void sync() const { GKNN_CUDA_TRY(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { GKNN_CUDA_TRY(cudaEventCreateWithFlags(&e_, flags)); }
  ~Event() {
    if (e_) GKNN_CUDA_TRY_NOTHROW(cudaEventDestroy(e_));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return e_; }
  void record(cudaStream_t s) { GKNN_CUDA_TRY(cudaEventRecord(e_, s)); }
  /// Milliseconds from `start` to this event (both recorded and complete).
  float since(const Event& start) const {
    float ms = 0;
    GKNN_CUDA_TRY(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

/// Scratch memory that kernels borrow for one launch sequence on one stream; grows, never shrinks.
class Workspace {
 public:
  /// Pointer to at least `bytes` bytes, 256-byte aligned; valid until the next get() on this workspace.
  void* get(size_t bytes) {
    buffer_.resize((bytes + 255) / 256 * 256);
    return buffer_.data();
  }
  size_t capacity_bytes() const noexcept { return buffer_.capacity_bytes(); }

 private:
  DeviceBuffer<unsigned char> buffer_;
};

}  // namespace gknn::detail::cuda
