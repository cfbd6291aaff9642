// upload.cuh: bulk host -> device copies of rows (Index::add of host rows, a one-shot search's resident base).
//
// Host rows are pageable, so they pass through pinned memory: the async team (core/chunk_pack.hpp) packs chunks
// into pinned slots, running ahead of the copies as far as the slots allow, while the caller enqueues each packed
// chunk's copy and the consumer stream runs the device work (norms, value scan, 8-bit conversion) of the chunks
// that have landed. Why it is built so (issue 12, item 5; H100 before: a 512 MB float base uploaded at 9.9 GB/s of
// the 54.6 GB/s a pinned copy reaches, an 8 MB one took 6-9.6 ms):
// * The pinned slots are kept for the process (per device, in an idle pool, grown and never shrunk), because
//   cudaMallocHost pins page by page (milliseconds for tens of MB) and cudaFreeHost synchronises the device: the
//   per-add Stager of two 32 MiB slots paid both on every add. They are not made by cudaHostAlloc either: it took
//   11.6 ms per 16 MiB slot on one H100 host (41 of the 53 ms of the process's first 1M x 128 float add, 12 ms in
//   the steady one), while cudaHostRegister of memory already faulted in ran at 11.6 GB/s there; a slot is mapped,
//   its pages faulted in by the host team (huge pages where the kernel gives them), then registered (cudaHostAlloc
//   where that fails, and for write-combined slots). The bench prints the first add's phases (UploadTimes).
// * Packers of their own: when the caller packed each chunk on the host team between copies, the team slept and
//   was woken for every chunk, and one machine's pack ran at 20 GB/s per chunk (the float add at 47% of pinned
//   H2D; 82% on another). The packers stay busy for the whole upload, a part of a chunk each, waiting only for
//   the slot they write to be free (its last copy's event); the caller packs the parts of the chunk it waits for
//   that no packer has taken (at the start of an upload, while the sleeping packers are woken one futex call
//   after another: the 16384-row add went from 0.60 to 0.70 ms with packers that only the caller waited for).
// * 4 slots of 16 MiB (the sweep of gknn_upload_bench: 16 MiB x 4 84%, 8 MiB x 4 82%, 2 slots 58-75%); an upload
//   of many chunks starts and ends with small ones (512 KiB, doubling), so that the first copy starts after a short
//   pack and the last chunk's device work is short; uploads of < 64 MiB are cut in 4 chunks of at least 512 KiB.
//   (Index adds started with full chunks until the H100 bench showed the first 16 MiB chunk packed only 0.8-1.4 ms
//   into the add, the copy engine idle until then; with copies and pack at about the same rate the copies cannot
//   catch up, which would explain the 0.2-1.5 ms spent after the last chunk was issued: the uint8 add at 64%.)
// * The device rows' cudaMalloc runs beside the copies: adds of the 1M-row bases from page-locked rows (no pack)
//   took 1.4-1.5 ms beyond their copies, most of it the cudaMalloc of 512 MB (the bench's cudaMalloc column).
//   HostUpload starts packing when it is made, before Index::add grows its rows, and run() has the rows grown on
//   the overlap helper while the first chunks are copied into device slots: as many as the device slots hold, the
//   ramp's small ones several to a slot (63.5 MiB of a 1M x 128 float add).
//   The rows themselves now come from gknn's device pool (common/buffer.cuh PooledDeviceMemory): the H200
//   timeline still showed the 512 MB cudaMalloc at 0.8-2 ms, the uint8 add's copies stalled 0.8 ms for device slots
//   meanwhile; an add after a freed Index gets the freed blocks back instead (GKNN_INDEX_POOL=0: cudaMalloc).
// * No device synchronisation per chunk: a slot is packed again after the event of its last copy, the consumer
//   waits for a chunk's copy through an event.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <cuda_runtime.h>

#include "core/chunk_pack.hpp"

namespace gknn::detail::cuda {

using detail::HostRows;  // rows in host memory (core/chunk_pack.hpp)

/// Uploaded rows on the device (one chunk, or a run of chunks), handed to the consumer's work.
struct UploadChunk {
  const void* device = nullptr;  ///< its rows on the device, contiguous (row_bytes apart)
  int64_t first_row = 0;         ///< of the whole upload
  int64_t rows = 0;
};

/// How an upload is cut: chunks of at most `chunk_bytes` through `slots` pinned slots, packed with streaming stores
/// or memcpy's.
struct UploadChunking {
  size_t chunk_bytes = 0;
  int slots = 0;
  bool streaming = false;
};
/// The chunking of an upload of `total_bytes` in rows of `row_bytes`: set_upload_override's (hooks.hpp), else 16 MiB
/// chunks (at least one row) through 4 slots, and uploads under 4 chunks cut in 4 chunks of at least 512 KiB, so
/// that the pack and the copy of a small add overlap too. Uploads of at least 32 MiB pack with streaming stores
/// (pack_streaming), except on a host whose last-level cache holds four times a ring of 4 slots of 8 MiB: there
/// they go in 8 MiB chunks packed with memcpy's stores, which the copy engine then reads from the cache
/// (GKNN_UPLOAD_CACHED_RING=0: the streaming 16 MiB chunks everywhere).
UploadChunking upload_chunking(size_t total_bytes, size_t row_bytes);
/// Whether this host's large uploads pack into the cache-resident ring (read once: the cache size, the switch).
bool upload_cached_ring();

/// One upload of host rows through the current device's kept pinned slots (rows in page-locked memory: copied from
/// where they are). Made, it leases the slots and starts packing the first chunks on the async team (when another
/// upload holds the team, run() packs on the host team instead); run() then copies them. Destroyed without run(),
/// or after run() threw, it stops the packers before it returns. Used by one thread; the current device must be
/// the same for both calls.
class HostUpload {
 public:
  explicit HostUpload(const HostRows& rows);
  ~HostUpload();
  HostUpload(const HostUpload&) = delete;
  HostUpload& operator=(const HostUpload&) = delete;

  /// Copies the rows to the device on `copy`, chunk by chunk (once). `dst` (device): rows land at
  /// dst + row * row_bytes, contiguous, and on_chunk is handed runs of consecutive chunks (up to 32 MiB, the last run
  /// when the last chunk has been sent). `dst` null: each chunk lands in a device slot of the lease (kept with the
  /// pinned ones), valid for the work on_chunk enqueues on `consumer`: the slot is overwritten only after that work.
  /// `consumer` first waits for the copies of what on_chunk(chunk) is handed, then on_chunk enqueues its device work
  /// on it. Returns once every chunk is packed and its work enqueued; `consumer` has waited for every copy, so
  /// synchronising it completes the upload (the pinned slots may be reused before that: their next user waits on
  /// their events).
  /// `prepare` (dst null): makes the destination and returns dst (or null: chunks stay in device slots); it runs
  /// before any on_chunk, on the process's overlap helper (core/host_parallel.hpp) when it is free, while the first
  /// chunks (as many as the device slots hold, several small ones to a slot) are copied into device slots, which
  /// then move into place on `consumer`. (An Index's first add of 1M x 128 floats: cudaMalloc of 512 MB takes
  /// about as long as 64 MB of copies.) What prepare throws, run throws.
  void run(void* dst, cudaStream_t copy, cudaStream_t consumer,
           const std::function<void(const UploadChunk&)>& on_chunk, const std::function<void*()>& prepare = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Where the host time of the last finished upload (HostUpload made, then run: an Index::add of host rows) went,
/// to show the one-time costs of a process's first add (gknn_upload_bench). Host wall times in ms.
struct UploadTimes {
  double total_ms = 0;      ///< from the upload's construction to the end of run (the add's commit and sync follow)
  double construct_ms = 0;  ///< the construction: slots leased, pinned bytes made, packers started
  double pin_ms = 0;        ///< pinned slots made (0: the kept ones were large enough): the three below and frees
  double touch_ms = 0;      ///< their pages mapped and faulted in on the host team
  double register_ms = 0;   ///< cudaHostRegister of them
  double hostalloc_ms = 0;  ///< cudaHostAlloc (write-combined slots, or where the register failed)
  int register_failures = 0;
  int64_t pinned_bytes = 0;  ///< pinned bytes made
  int pinned_blocks = 0;
  double packers_ms = 0;    ///< the packers' start on the async team (its threads made on first use)
  int threads_created = 0;  ///< async team threads made by this upload
  double run_ms = 0;            ///< run(): copies enqueued, their device work handed out
  double device_slots_ms = 0;   ///< device slots grown (cudaMalloc on first use)
  double first_packed_ms = 0;   ///< from run's start until the first chunk was packed
  double first_issued_ms = 0;   ///< from run's start until the first chunk's copy was issued
  double prepare_ms = 0;        ///< the destination made (the device rows' cudaMalloc)
  double prepare_wait_ms = 0;   ///< run waited for it (made on the overlap helper)
  bool prepare_beside = false;  ///< made on the overlap helper, beside the first copies
  bool packers = false;         ///< packed on the async team (else by the caller, on the host team)
  bool streaming = false;       ///< packed with streaming stores (else memcpy's; rows copied where they are: none)
  int64_t chunks = 0;
  int slots = 0;
  int64_t slot_bytes = 0;
  int64_t early_chunks = 0;  ///< chunks copied into device slots while the destination was made (beside: else 0)
  int64_t early_bytes = 0;
  /// Set after run by the caller's commit (note_upload_commit): waiting for the device's last copies and work (the
  /// scan's result fetched, the stream synchronised) and reading the facts. -1: not noted.
  double commit_ms = -1;
};
UploadTimes last_upload_times();
/// The commit of the last finished upload ran from `start` until now (UploadTimes::commit_ms, and the timeline's
/// commit when one is recorded; Index::add's store notes it).
void note_upload_commit(std::chrono::steady_clock::time_point start);

/// A per-chunk timeline of one upload (gknn_upload_bench, issue 12: where an add from page-locked rows spends the
/// ~1.2 ms it costs beyond the copy of its bytes). Recorded only while set_upload_timeline(true): run() then records
/// timing events on the copy stream before and after each chunk's copy (and one at its start, the origin, on the
/// idle copy stream) and on the consumer around each piece of device work it hands out (a chunk moved from its
/// device slot into place; on_chunk's norms, scan, conversion), and host time points of its phases. Off (the
/// default), an upload pays one relaxed atomic load for it.
struct UploadTimeline {
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Chunk {
    int64_t first_row = 0, rows = 0;
    int64_t bytes = 0;
    bool in_slot = false;  ///< landed in a device slot (moved into place or converted from there), else in place
    TimePoint ready;       ///< host: packed (or its slot free): its copy about to be issued
    TimePoint issued;      ///< host: its cudaMemcpyAsync returned
    double copy_start = 0, copy_end = 0;  ///< device, ms after the origin event
  };
  struct Work {
    int64_t first_chunk = 0, last_chunk = 0;  ///< the chunks it covers
    bool move = false;    ///< a chunk moved from its device slot into place (else on_chunk's work)
    double start = 0, end = 0;  ///< device, ms after the origin (start: once its copies had landed)
  };
  bool valid = false;
  TimePoint made;          ///< the upload's construction started
  TimePoint constructed;   ///< ... ended
  TimePoint run_start;     ///< run() entered
  TimePoint origin;        ///< the origin event recorded (right after run_start, on the idle copy stream)
  TimePoint prepare_start, prepare_end;  ///< the destination made (on the overlap helper or the caller)
  TimePoint helper_joined;  ///< run had the helper's destination (equal to prepare_end when made by the caller)
  TimePoint last_issued;   ///< the last chunk's copy issued
  TimePoint run_end;       ///< run() returned
  TimePoint commit_start, commit_end;  ///< the store's commit (note_upload_commit)
  std::vector<Chunk> chunks;
  std::vector<Work> work;
};
/// Whether uploads record their timeline (process-wide; off by default).
void set_upload_timeline(bool on);
/// The timeline of the last upload run while it was on, its device times read (waits for its events: call once the
/// upload's work has finished, e.g. after a device synchronisation), and forgotten; valid false when there is none.
UploadTimeline take_upload_timeline();
/// Milliseconds to make one pinned block of `bytes` as the uploads make their slots, and free it.
double time_pinned_slot(size_t bytes);

/// HostUpload(rows).run(dst, copy, consumer, on_chunk).
void upload_host_rows(const HostRows& rows, void* dst, cudaStream_t copy, cudaStream_t consumer,
                      const std::function<void(const UploadChunk&)>& on_chunk);

/// dst[i] = float(src[i]) for `count` values (8-bit rows converted where they are uploaded), on `s`.
void convert_bytes_to_floats(const unsigned char* src, int64_t count, float* dst, cudaStream_t s);
/// Has the current device load convert_bytes_to_floats' kernel (CUDA's lazy loading would load it at its first
/// launch, on the caller's path between two copies of the process's first 8-bit add); an 8-bit add calls it beside
/// its destination's cudaMalloc, on the overlap helper. Cheap once loaded.
void load_byte_conversion();

/// Frees the idle upload slots of every device (pinned and device buffers, events) and gives back the idle blocks
/// of gknn's device pools (trim_device_pools, common/buffer.cuh: the rows of freed Indexes, kept for the next add);
/// part of release_cached_device_resources (hooks.hpp: the test mains and gknn_upload_bench call it; no public API
/// reaches it). A later upload makes new slots, a later add takes new blocks. A pool's idle blocks never make an
/// allocation of gknn fail: a failed one trims the pools and is tried again.
void release_upload_slots();

}  // namespace gknn::detail::cuda
