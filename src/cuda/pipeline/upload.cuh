// upload.cuh: bulk host -> device copies of rows (Index::add of host rows, a one-shot search's resident base).
//
// Host rows are pageable, so they pass through pinned memory: the host packs chunk i + 1 into one pinned slot (on
// all host threads) while the copy engine moves chunk i out of another, and the consumer stream runs chunk i's
// device work (norms, value scan, 8-bit conversion) while chunk i + 1 is copied. Why it is built so (issue 12,
// item 5; H100 before: a 512 MB float base uploaded at 9.9 GB/s of the 54.6 GB/s a pinned copy reaches, an 8 MB
// one took 6-9.6 ms):
// * The pinned slots are kept for the process (per device, in an idle pool, grown and never shrunk), because
//   cudaMallocHost pins page by page (milliseconds for tens of MB) and cudaFreeHost synchronises the device: the
//   per-add Stager of two 32 MiB slots paid both on every add.
// * Several smaller slots (default 4 x 8 MiB, adds of < 32 MiB cut in 4 chunks) keep the copy engine busy while the
//   host packs, start the first copy early, and leave the slots small enough to stay in the host's last-level
//   cache between the pack and the DMA that reads them.
// * No device synchronisation per chunk: a slot is packed again after the event of its last copy, the consumer
//   waits for a chunk's copy through an event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include <cuda_runtime.h>

namespace gknn::detail::cuda {

/// Rows in host memory: `rows` rows of `row_bytes` bytes, `stride_bytes` apart (>= row_bytes).
struct HostRows {
  const void* data = nullptr;
  int64_t rows = 0;
  size_t row_bytes = 0;
  size_t stride_bytes = 0;
};

/// Uploaded rows on the device (one chunk, or a run of chunks), handed to the consumer's work.
struct UploadChunk {
  const void* device = nullptr;  ///< its rows on the device, contiguous (row_bytes apart)
  int64_t first_row = 0;         ///< of the whole upload
  int64_t rows = 0;
};

/// How an upload is cut: chunks of at most `chunk_bytes` through `slots` pinned slots.
struct UploadChunking {
  size_t chunk_bytes = 0;
  int slots = 0;
};
/// The chunking of an upload of `total_bytes` in rows of `row_bytes`: the set_upload_chunking hook's, else 8 MiB
/// chunks (at least one row) through 4 slots, and uploads under 4 chunks cut in 4 chunks of at least 512 KiB, so
/// that the pack and the copy of a small add overlap too.
UploadChunking upload_chunking(size_t total_bytes, size_t row_bytes);

/// Copies `rows` to the device on `copy`, chunk by chunk, through the current device's kept pinned slots (rows in
/// page-locked memory: from where they are). `dst` (device): rows land at dst + row * row_bytes, contiguous, and
/// on_chunk is handed runs of consecutive chunks (up to 32 MiB, the last run when the last chunk has been sent).
/// `dst` null: each chunk lands in a device slot of the lease (kept with the pinned ones), valid for the work
/// on_chunk enqueues on `consumer`: the slot is overwritten only after that work. `consumer` first waits for the
/// copies of what on_chunk(chunk) is handed, then on_chunk enqueues its device work on it. Returns once every chunk
/// is packed and its work enqueued; `consumer` has waited for every copy, so synchronising it completes the upload
/// (the pinned slots may be reused before that: their next user waits on their events).
void upload_host_rows(const HostRows& rows, void* dst, cudaStream_t copy, cudaStream_t consumer,
                      const std::function<void(const UploadChunk&)>& on_chunk);

/// dst[i] = float(src[i]) for `count` values (8-bit rows converted where they are uploaded), on `s`.
void convert_bytes_to_floats(const unsigned char* src, int64_t count, float* dst, cudaStream_t s);

/// Frees the idle upload slots of every device (pinned and device buffers, events); part of
/// release_cached_device_resources (hooks.hpp). A later upload makes new ones.
void release_upload_slots();

}  // namespace gknn::detail::cuda
