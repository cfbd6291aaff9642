// chunk_pack.hpp: the host side of a chunked upload (cuda/pipeline/upload.cu): host rows packed chunk by chunk
// into a few staging slots, ahead of the copies that read them out, on the async team (async_team.hpp). No CUDA
// here (the copy's completion is the caller's callback), so that the ordering is tested on the CPU
// (tests/host_parallel_test.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/async_team.hpp"

namespace gknn::detail {

/// Rows in host memory: `rows` rows of `row_bytes` bytes, `stride_bytes` apart (>= row_bytes).
struct HostRows {
  const void* data = nullptr;
  int64_t rows = 0;
  size_t row_bytes = 0;
  size_t stride_bytes = 0;
};

/// memcpy(dst, src, bytes) with non-temporal (streaming) stores for the 64-byte lines of dst that it writes whole,
/// when bytes >= 16 KiB (x86-64: SSE2, part of the baseline); ordinary stores for the partial lines at either end, for
/// smaller copies and elsewhere. Any alignment of either pointer. Ends with a store fence: what it wrote is visible to
/// another thread (and a DMA engine) once a release store after it is. Why: ordinary stores to lines not in the cache
/// read each line first (read for ownership), so a copy into a pinned slot moved 3 bytes of host memory per byte
/// (source read, destination read and written back) while the copy engine read the slots beside it; streaming stores
/// write whole lines (2 bytes per byte). glibc's memcpy streams only copies above a threshold of several MiB (a
/// fraction of the last-level cache), which a packer's part of <= 1 MiB never reaches.
void stream_copy(unsigned char* dst, const unsigned char* src, size_t bytes);

/// Rows [first, first + count) copied contiguously to `dst`, on the calling thread: with stream_copy when
/// `streaming` (strided rows of < 4 KiB gathered into a small buffer in the cache, then streamed out), else with
/// memcpy.
void copy_rows(unsigned char* dst, const HostRows& rows, int64_t first, int64_t count, bool streaming = false);
/// Whether large uploads pack with streaming stores (default: yes; pipeline/upload.cu); process-wide.
/// gknn_upload_bench turns it off to time the adds with memcpy's stores beside those with streaming ones.
void set_pack_streaming(bool on);
bool pack_streaming();
/// The size of cpu0's largest cache as sysfs states it (Linux: /sys/devices/system/cpu/cpu0/cache/index*/size), read
/// once; 0 where it cannot be read. Whether a ring of staging slots stays cache-resident turns on it.
size_t last_level_cache_bytes();
/// Parses a sysfs cache size ("32768K", "2M", "512"); 0 for anything else.
size_t parse_cache_size(const char* text);

/// Rows where each chunk starts, then the total: chunks of `chunk_rows`, except that an upload of many chunks
/// starts with chunks of `ramp_bytes`, doubling up to chunk_rows (unless !ramp_up), and ends with the same in
/// reverse: its first copy starts after a short pack (the pipeline's fill) and its last chunk's copy and device work
/// are short (its drain).
std::vector<int64_t> chunk_starts(int64_t rows, int64_t chunk_rows, size_t row_bytes, size_t ramp_bytes,
                                  bool ramp_up = true);

/// The pack of an upload on the async team. Chunk c (rows [starts[c], starts[c + 1])) goes to slots[c % slots]. The
/// parts of all chunks are taken in upload order by any packer (and by the caller in wait_packed); a part of chunk
/// c >= slots is written once chunk c - slots, that slot's last, has been issued (issued(c - slots)) and
/// wait_copied(slot) has returned. The caller issues chunk c once wait_packed(c) returns. Packers do not throw: an
/// error of wait_copied (non-zero) is kept, its parts are counted as packed without being written, and wait_packed
/// returns it.
class ChunkPack {
 public:
  /// wait_copied(slot): blocks until the copy out of `slot` last issued has finished; 0, or an error code. Starts
  /// packing on up to `threads` threads; started() is false when the team is busy or threads < 1 (nothing runs).
  /// `starts` must outlive this.
  /// `streaming`: parts copied with streaming stores (copy_rows).
  ChunkPack(const HostRows& rows, const std::vector<int64_t>& starts, std::vector<unsigned char*> slots, int threads,
            std::function<int(size_t slot)> wait_copied, bool streaming = false);
  ~ChunkPack() { stop(); }
  ChunkPack(const ChunkPack&) = delete;
  ChunkPack& operator=(const ChunkPack&) = delete;

  bool started() const { return job_->started(); }
  /// Waits until chunk c is packed in its slot, packing the parts of it that no packer has taken yet; 0, or the first
  /// error of a wait_copied. Chunks before c must have been issued.
  int wait_packed(int64_t c);
  /// Chunk c's copy out of its slot is issued: the packers of chunk c + slots may wait for it.
  void issued(int64_t c);
  /// Stops the packers (those waiting for a copy that will not be issued wake) and waits until they have left.
  /// Idempotent.
  void stop();

 private:
  struct Part {
    int64_t chunk, first, count;
  };
  void work();
  /// Packs part `p` (after waiting for its slot, unless `err` is already set: then it is only counted); false when
  /// stopped while waiting (the part is not counted). *err_out: the error this packer keeps from now on.
  bool pack_part(const Part& p, int err, int* err_out = nullptr);
  int wait_slot_free(int64_t c);
  void keep_error(int e);

  const HostRows rows_;
  const std::vector<int64_t>& starts_;
  const std::vector<unsigned char*> slots_;
  const std::function<int(size_t)> wait_copied_;
  const bool streaming_;
  std::vector<Part> parts_;
  std::atomic<size_t> next_{0};                      ///< the next part to take
  std::unique_ptr<std::atomic<int64_t>[]> packed_;   ///< rows of chunk c packed
  std::unique_ptr<std::atomic<int64_t>[]> free_;     ///< per slot: the last chunk it was found free for (-1: none)
  std::unique_ptr<std::atomic<int64_t>[]> claimed_;  ///< per slot: the last chunk one of whose packers waits for it
  std::atomic<int64_t> issued_{0};                   ///< chunks whose copy is issued
  std::atomic<bool> stop_{false};
  std::atomic<int> error_{0};
  std::optional<AsyncJob> job_;  ///< last: started once every field above is set
};

}  // namespace gknn::detail
