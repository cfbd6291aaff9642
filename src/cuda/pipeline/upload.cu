// upload.cu: bulk host -> device copies through kept pinned slots (see upload.cuh).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "core/async_team.hpp"
#include "core/chunk_pack.hpp"
#include "core/env_switch.hpp"
#include "core/host_parallel.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/common/device_scope.cuh"
#include "cuda/common/error.cuh"
#include "cuda/common/idle_pool.hpp"
#include "cuda/hooks.hpp"
#include "gknn/error.hpp"
#include "cuda/pipeline/upload.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr size_t kChunkBytes = size_t(16) << 20;      ///< largest chunk by default
constexpr size_t kMinChunkBytes = size_t(512) << 10;  ///< smallest chunk a small upload is cut into
constexpr int64_t kMinChunks = 4;                     ///< chunks a small upload is cut into (pack and copy overlap)
constexpr int kSlots = 4;
constexpr size_t kRampBytes = size_t(512) << 10;  ///< first and last chunk of an upload of many chunks
constexpr size_t kKeptSlotSets = 2;  ///< idle slot sets kept per device (concurrent uploads each lease one)
constexpr int64_t kMinPackPart = int64_t(1) << 19;  ///< bytes per thread of a pack on the host team
constexpr int kMaxPackers = 16;
/// The most packers an upload wakes: kMaxPackers (tuned on the H100 host's 16 cores), or GKNN_UPLOAD_PACKERS (read
/// once), to measure hosts with more cores: on the H200 host's 32, 8-bit adds packed at 32-44 GB/s beside 55 GB/s
/// copies (bench/results/upload_timeline_2026-11-27_h200.md). Anything but a positive integer is refused.
int packer_cap() {
  static const int cap = [] {
    const char* v = std::getenv("GKNN_UPLOAD_PACKERS");
    if (!v || !*v) return kMaxPackers;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    GKNN_EXPECT(*end == '\0' && n > 0 && n <= 1024, ErrorCode::InvalidArgument,
                "GKNN_UPLOAD_PACKERS must be a positive integer (got '", v, "')");
    return static_cast<int>(n);
  }();
  return cap;
}

/// GKNN_UPLOAD_PREPARE_FIRST (read once; env_switch.hpp): every upload makes its destination before its first copy
/// instead of beside the first copies, to measure what the overlap costs. On the H200 host an 8-bit add's first
/// 0.5 MiB copy took 0.84 ms beside the 512 MB cudaMalloc of its float rows, and its packers stalled until the
/// destination was taken (bench/results/upload_timeline_2026-11-27_h200.md).
bool prepare_first() {
  static const bool on = env_switch_on("GKNN_UPLOAD_PREPARE_FIRST");
  return on;
}

/// Smaller uploads are packed by their caller and make their destination before their copies (waking a thread
/// would cost more than either saves), unless the chunking is forced (set_upload_override: the tests' small inputs
/// then take the paths of large uploads).
constexpr size_t kMinOverlapBytes = size_t(1) << 20;
constexpr size_t kConsumerGroupBytes = size_t(32) << 20;  ///< rows landed in place handed to on_chunk at once
constexpr size_t kLandingAlign = 256;  ///< of a chunk that lands in a device slot after another one
/// Uploads of at least this many bytes pack with streaming stores (core/chunk_pack.hpp stream_copy: 2 bytes of host
/// memory traffic per byte packed instead of 3). Smaller ones keep memcpy's: their rows and slots may stay in the
/// last-level cache from one add to the next (ordinary stores then hit the cache, and the copy engine reads it).
constexpr size_t kMinStreamingBytes = size_t(32) << 20;
/// Large uploads on a host whose last-level cache holds kCacheShare times a ring of kSlots x kCachedChunkBytes pack
/// into that ring with memcpy's stores instead: the pack's lines are written into the cache (no read for ownership
/// from DRAM, no write-back while the ring stays resident) and the copy engine's reads, which snoop the cache, find
/// them there, so a pageable add moves about 1 byte of host DRAM per byte instead of the streaming pack's 2 plus the
/// copy engine's read. Measured on the H200 host (300 MB last-level cache; gknn_upload_bench's sweep,
/// bench/results/upload_2026-11-29b_h200.md): the 1M x 128 float32 add 9.98 ms = 95% of the pinned H2D (8 MiB x 4,
/// memcpy stores) against 11.9-12.5 ms = 75-79% streaming in 4-16 MiB chunks; 16 MiB chunks cached 10.42 ms (91%),
/// 32 MiB 11.66 (81%): the ring must stay well inside the cache. kCacheShare keeps it within a quarter on hosts not
/// measured (GKNN_UPLOAD_CACHED_RING=0 turns it off, for the A/B).
constexpr size_t kCachedChunkBytes = size_t(8) << 20;
constexpr size_t kCacheShare = 4;

}  // namespace

bool upload_cached_ring() {
  static const bool on = !env_switch_off("GKNN_UPLOAD_CACHED_RING") &&
                         kCacheShare * kSlots * kCachedChunkBytes <= last_level_cache_bytes();
  return on;
}

namespace {

std::atomic<int64_t> g_chunk_override{0};
std::atomic<int> g_slots_override{0};
std::atomic<bool> g_write_combined{false};
std::atomic<int> g_ramp_override{0};
std::atomic<int64_t> g_pinned_allocations{0};

std::mutex g_times_mutex;
UploadTimes g_last_times;  ///< of the last upload that finished (any thread)

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

constexpr size_t kHugePage = size_t(2) << 20;

/// Pinned host bytes. Mapped here, their pages faulted in on the host team, then page-locked by cudaHostRegister
/// (`mapped`: the mapping's length): cudaHostAlloc faults and locks the pages one by one on the calling thread, and
/// on one H100 host took 11.6 ms per 16 MiB (1.4 GB/s; 41 of the 53 ms of the first 1M x 128 float add, whose 4
/// slots it made), while cudaHostRegister of rows already in memory ran at 11.6 GB/s on the same host (the bench's
/// cudaHostRegister line; PyTorch's pinned_use_cuda_host_register with pinned_num_register_threads does the same).
/// Write-combined bytes, and any whose register fails, come from cudaHostAlloc (`mapped` 0).
struct PinnedBytes {
  unsigned char* p = nullptr;
  size_t bytes = 0;
  size_t mapped = 0;
};

void free_pinned(PinnedBytes& b) {
  if (!b.p) return;
#ifdef __linux__
  if (b.mapped) {
    GKNN_CUDA_TRY_NOTHROW(cudaHostUnregister(b.p));
    munmap(b.p, b.mapped);
  } else
#endif
  {
    GKNN_CUDA_TRY_NOTHROW(cudaFreeHost(b.p));
  }
  b = PinnedBytes{};
}

/// `count` pinned blocks of at least `bytes` each (times added to *times). Throws (freeing what it made) when
/// cudaHostAlloc fails.
std::vector<PinnedBytes> make_pinned(size_t count, size_t bytes, bool wc, UploadTimes* times) {
  std::vector<PinnedBytes> made(count);
  auto host_alloc = [&](PinnedBytes& b) {
    const Clock::time_point t0 = Clock::now();
    GKNN_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&b.p), bytes,
                                wc ? cudaHostAllocWriteCombined : cudaHostAllocDefault));
    b.bytes = bytes;
    times->hostalloc_ms += ms_since(t0);
  };
  try {
#ifdef __linux__
    if (!wc) {
      // Mapped 2 MiB-aligned and advised as huge pages (fewer faults; ignored where the kernel has none).
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      const size_t align = bytes >= kHugePage ? kHugePage : page;
      const size_t length = (bytes + align - 1) / align * align;
      Clock::time_point t0 = Clock::now();
      for (PinnedBytes& b : made) {
        void* m = mmap(nullptr, length + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) continue;  // cudaHostAlloc below
        const uintptr_t at = reinterpret_cast<uintptr_t>(m), aligned = (at + align - 1) / align * align;
        if (aligned > at) munmap(m, aligned - at);
        if (const size_t tail = at + length + align - (aligned + length); tail > 0)
          munmap(reinterpret_cast<void*>(aligned + length), tail);
        b.p = reinterpret_cast<unsigned char*>(aligned);
        b.bytes = b.mapped = length;
#ifdef MADV_HUGEPAGE
        if (align == kHugePage) madvise(b.p, length, MADV_HUGEPAGE);
#endif
#ifdef MADV_DONTFORK
        madvise(b.p, length, MADV_DONTFORK);  // a forked child's copy-on-write must not move pages the device reads
#endif
      }
      // Every page written once, by the host team in parts of whole huge pages (the kernel zeroes them there).
      const size_t units = (length + align - 1) / align, blocks = made.size();
      const int parts = host_parts(static_cast<int64_t>(units * blocks * align), int64_t(4) << 20);
      host_parallel(parts, [&](int part) {
        const size_t all = units * blocks, begin = all * part / parts, end = all * (part + 1) / parts;
        for (size_t u = begin; u < end; ++u) {
          PinnedBytes& b = made[u / units];
          if (!b.p) continue;
          volatile unsigned char* q = b.p + (u % units) * align;
          for (size_t off = 0; off < align && (u % units) * align + off < length; off += page) q[off] = 0;
        }
      });
      times->touch_ms += ms_since(t0);
      t0 = Clock::now();
      for (PinnedBytes& b : made) {
        if (!b.p) continue;
        if (cudaHostRegister(b.p, b.mapped, cudaHostRegisterDefault) != cudaSuccess) {
          cudaGetLastError();  // not kept: the block comes from cudaHostAlloc instead
          munmap(b.p, b.mapped);
          b = PinnedBytes{};
          ++times->register_failures;
        }
      }
      times->register_ms += ms_since(t0);
    }
#endif
    for (PinnedBytes& b : made)
      if (!b.p) host_alloc(b);
  } catch (...) {
    for (PinnedBytes& b : made) free_pinned(b);
    throw;
  }
  times->pinned_bytes += static_cast<int64_t>(count * bytes);
  times->pinned_blocks += static_cast<int>(count);
  g_pinned_allocations.fetch_add(static_cast<int64_t>(count));
  return made;
}

/// One pinned slot (and, for uploads without a destination, its device twin) with the events that say when it
/// may be written again.
struct Slot {
  PinnedBytes pinned;  ///< the host bytes copies read
  bool write_combined = false;
  DeviceBuffer<unsigned char> device;
  /// After the copy that last read `pinned` (copies run in order on one stream: it also follows every copy issued
  /// before it, into any slot's `device`).
  Event copied{cudaEventDisableTiming};
  Event consumed{cudaEventDisableTiming};  ///< after the consumer's work that last read `device`
  bool copy_pending = false, consume_pending = false;

  Slot() = default;
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() {
    // The copy engine may still read the pinned bytes of the last upload (its caller synchronises later).
    if (copy_pending) GKNN_CUDA_TRY_NOTHROW(cudaEventSynchronize(copied.get()));
    if (consume_pending) GKNN_CUDA_TRY_NOTHROW(cudaEventSynchronize(consumed.get()));
    free_pinned(pinned);
  }

  /// The pinned bytes may be written (the last copy from them has finished).
  void wait_copied() {
    if (copy_pending) GKNN_CUDA_TRY(cudaEventSynchronize(copied.get()));
    copy_pending = false;
  }

  /// Whether the slot lacks `bytes` pinned bytes of the asked kind.
  bool lacks_host(size_t bytes, bool wc) const { return !pinned.p || pinned.bytes < bytes || write_combined != wc; }

  /// Frees the pinned bytes (the last copy from them has finished first).
  void free_host() {
    wait_copied();
    free_pinned(pinned);
  }

  void set_host(PinnedBytes b, bool wc) {
    pinned = b;
    write_combined = wc;
  }

  /// At least `bytes` device bytes; the consumer's reads of the old ones have finished before they are freed.
  void reserve_device(size_t bytes) {
    if (device.capacity_bytes() >= bytes) return;
    if (consume_pending) GKNN_CUDA_TRY(cudaEventSynchronize(consumed.get()));
    consume_pending = false;
    device.resize(bytes);
  }
};

struct UploadSlots {
  std::vector<std::unique_ptr<Slot>> slots;
};

/// The current device's idle slot set, or a new one; given back to the pool (at most kKeptSlotSets idle per
/// device) when the upload returns.
class SlotsLease {
 public:
  SlotsLease() {
    GKNN_CUDA_TRY(cudaGetDevice(&device_));
    if (std::optional<std::unique_ptr<UploadSlots>> idle = idle_pool<std::unique_ptr<UploadSlots>>().take(device_))
      slots_ = std::move(*idle);
    else
      slots_ = std::make_unique<UploadSlots>();
  }
  ~SlotsLease() { idle_pool<std::unique_ptr<UploadSlots>>().give(device_, slots_, kKeptSlotSets); }
  SlotsLease(const SlotsLease&) = delete;
  SlotsLease& operator=(const SlotsLease&) = delete;
  UploadSlots& operator*() const { return *slots_; }

 private:
  int device_ = 0;
  std::unique_ptr<UploadSlots> slots_;
};

// The upload timeline (upload.cuh UploadTimeline), recorded only while g_timeline_on.
std::atomic<bool> g_timeline_on{false};

/// One upload's timeline as it is recorded, with its timing events (taken from a pool kept per device: the first
/// timed upload of a process makes them, so a bench warms it up first).
struct TimelineRecord {
  UploadTimeline t;
  int device = 0;
  cudaEvent_t origin = nullptr;
  std::vector<cudaEvent_t> copy_start, copy_end;           ///< per chunk
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> work;  ///< per t.work
  std::vector<cudaEvent_t> all;                           ///< every event taken (given back to the pool)
};

std::mutex g_timeline_mutex;
std::map<int, std::vector<cudaEvent_t>> g_timeline_pool;  ///< idle timing events per device
std::optional<TimelineRecord> g_timeline;                ///< the last recorded, not yet taken

void give_back_events(TimelineRecord& r) {  // under g_timeline_mutex
  std::vector<cudaEvent_t>& pool = g_timeline_pool[r.device];
  pool.insert(pool.end(), r.all.begin(), r.all.end());
  r.all.clear();
}

/// Records one upload's timeline (run's `tl`): events on the current device.
class TimelineRecorder {
 public:
  TimelineRecorder(int64_t chunks, Clock::time_point made, Clock::time_point constructed, Clock::time_point run_start,
                   cudaStream_t copy) {
    GKNN_CUDA_TRY(cudaGetDevice(&r_.device));
    r_.t.valid = true;
    r_.t.made = made;
    r_.t.constructed = constructed;
    r_.t.run_start = run_start;
    r_.t.chunks.resize(static_cast<size_t>(chunks));
    r_.copy_start.resize(static_cast<size_t>(chunks));
    r_.copy_end.resize(static_cast<size_t>(chunks));
    {
      std::lock_guard<std::mutex> lock(g_timeline_mutex);
      std::vector<cudaEvent_t>& pool = g_timeline_pool[r_.device];
      // Enough for the copies and a move and a work per chunk (and the origin), made before the first copy.
      const size_t want = static_cast<size_t>(6 * chunks + 8);
      while (!pool.empty() && r_.all.size() < want) {
        r_.all.push_back(pool.back());
        pool.pop_back();
      }
    }
    while (r_.all.size() < static_cast<size_t>(6 * chunks + 8)) {
      cudaEvent_t e = nullptr;
      GKNN_CUDA_TRY(cudaEventCreate(&e));
      r_.all.push_back(e);
    }
    r_.origin = next();
    GKNN_CUDA_TRY(cudaEventRecord(r_.origin, copy));
    r_.t.origin = Clock::now();
  }
  ~TimelineRecorder() {
    std::lock_guard<std::mutex> lock(g_timeline_mutex);
    if (!r_.all.empty()) give_back_events(r_);  // not kept (run threw)
  }
  TimelineRecorder(const TimelineRecorder&) = delete;
  TimelineRecorder& operator=(const TimelineRecorder&) = delete;

  UploadTimeline& t() { return r_.t; }
  void copy_start(int64_t c, cudaStream_t s) { GKNN_CUDA_TRY(cudaEventRecord(at(r_.copy_start, c) = next(), s)); }
  void copy_end(int64_t c, cudaStream_t s) { GKNN_CUDA_TRY(cudaEventRecord(at(r_.copy_end, c) = next(), s)); }
  /// A piece of device work on `s` starts (after its waits); returns its index for end_work.
  size_t begin_work(int64_t first_chunk, int64_t last_chunk, bool move, cudaStream_t s) {
    UploadTimeline::Work w;
    w.first_chunk = first_chunk;
    w.last_chunk = last_chunk;
    w.move = move;
    r_.t.work.push_back(w);
    r_.work.emplace_back(next(), nullptr);
    GKNN_CUDA_TRY(cudaEventRecord(r_.work.back().first, s));
    return r_.work.size() - 1;
  }
  void end_work(size_t w, cudaStream_t s) { GKNN_CUDA_TRY(cudaEventRecord(r_.work[w].second = next(), s)); }
  /// Kept as the last timeline (the one before it, not taken, is dropped).
  void keep() {
    r_.t.run_end = Clock::now();
    std::lock_guard<std::mutex> lock(g_timeline_mutex);
    if (g_timeline) give_back_events(*g_timeline);
    g_timeline = std::move(r_);
    r_.all.clear();
  }

 private:
  static cudaEvent_t& at(std::vector<cudaEvent_t>& v, int64_t c) { return v[static_cast<size_t>(c)]; }
  cudaEvent_t next() {
    if (used_ == r_.all.size()) {  // more pieces of work than foreseen
      cudaEvent_t e = nullptr;
      GKNN_CUDA_TRY(cudaEventCreate(&e));
      r_.all.push_back(e);
    }
    return r_.all[used_++];
  }
  TimelineRecord r_;
  size_t used_ = 0;
};

/// The same on the host team (the caller packs so when another upload holds the async team).
void pack(unsigned char* dst, const HostRows& rows, int64_t first, int64_t count, bool streaming) {
  const int parts = host_parts(count * static_cast<int64_t>(rows.row_bytes), kMinPackPart);
  const int64_t per_part = (count + parts - 1) / parts;
  host_parallel(parts, [&](int part) {
    const int64_t begin = part * per_part, end = std::min(count, begin + per_part);
    if (begin < end)
      copy_rows(dst + static_cast<size_t>(begin) * rows.row_bytes, rows, first + begin, end - begin, streaming);
  });
}

__global__ void bytes_to_floats_kernel(const unsigned char* __restrict__ src, int64_t count, float* __restrict__ dst) {
  // Four values per thread: one 4-byte load (src: in a device slot, at a 256-byte boundary), four float stores (dst
  // follows the stored rows: any alignment).
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; 4 * i < count; i += step) {
    if (4 * i + 4 <= count) {
      const uchar4 v = reinterpret_cast<const uchar4*>(src)[i];
      dst[4 * i] = v.x;
      dst[4 * i + 1] = v.y;
      dst[4 * i + 2] = v.z;
      dst[4 * i + 3] = v.w;
    } else {
      for (int64_t j = 4 * i; j < count; ++j) dst[j] = src[j];
    }
  }
}

}  // namespace

void set_upload_override(UploadOverride o) {
  g_chunk_override.store(std::max<int64_t>(0, o.chunk_bytes));
  g_slots_override.store(std::max(0, o.slots));
  g_write_combined.store(o.write_combined);
  g_ramp_override.store(std::clamp(o.ramp, 0, 2));
}

int64_t upload_pinned_allocations() { return g_pinned_allocations.load(); }

UploadTimes last_upload_times() {
  std::lock_guard<std::mutex> lock(g_times_mutex);
  return g_last_times;
}

void note_upload_commit(Clock::time_point start) {
  const Clock::time_point end = Clock::now();
  {
    std::lock_guard<std::mutex> lock(g_times_mutex);
    g_last_times.commit_ms = std::chrono::duration<double, std::milli>(end - start).count();
  }
  if (!g_timeline_on.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_timeline_mutex);
  if (g_timeline && g_timeline->t.commit_start == Clock::time_point{}) {
    g_timeline->t.commit_start = start;
    g_timeline->t.commit_end = end;
  }
}

void set_upload_timeline(bool on) { g_timeline_on.store(on); }

UploadTimeline take_upload_timeline() {
  std::lock_guard<std::mutex> lock(g_timeline_mutex);
  if (!g_timeline) return UploadTimeline{};
  TimelineRecord& r = *g_timeline;
  DeviceScope scope(r.device);
  auto since_origin = [&](cudaEvent_t e) {
    float ms = 0;
    if (!e) return 0.0;
    GKNN_CUDA_TRY(cudaEventSynchronize(e));
    GKNN_CUDA_TRY(cudaEventElapsedTime(&ms, r.origin, e));
    return static_cast<double>(ms);
  };
  for (size_t c = 0; c < r.t.chunks.size(); ++c) {
    r.t.chunks[c].copy_start = since_origin(r.copy_start[c]);
    r.t.chunks[c].copy_end = since_origin(r.copy_end[c]);
  }
  for (size_t w = 0; w < r.t.work.size(); ++w) {
    r.t.work[w].start = since_origin(r.work[w].first);
    r.t.work[w].end = since_origin(r.work[w].second);
  }
  UploadTimeline t = std::move(r.t);
  give_back_events(r);
  g_timeline.reset();
  return t;
}

double time_pinned_slot(size_t bytes) {
  UploadTimes t;
  const Clock::time_point t0 = Clock::now();
  std::vector<PinnedBytes> made = make_pinned(1, bytes, false, &t);
  free_pinned(made[0]);
  return ms_since(t0);
}

UploadChunking upload_chunking(size_t total_bytes, size_t row_bytes) {
  const int64_t forced = g_chunk_override.load();
  const int forced_slots = g_slots_override.load();
  // The bench's forced chunkings keep pack_streaming's stores as it sets them.
  const bool cached = forced <= 0 && forced_slots <= 0 && total_bytes >= kMinStreamingBytes && upload_cached_ring();
  const size_t largest = forced > 0 ? static_cast<size_t>(forced) : cached ? kCachedChunkBytes : kChunkBytes;
  size_t chunk = std::min(largest, std::max(std::min(kMinChunkBytes, largest), total_bytes / kMinChunks));
  chunk = std::max(row_bytes, chunk / std::max<size_t>(1, row_bytes) * row_bytes);  // whole rows, at least one
  const bool streaming = !cached && pack_streaming() && total_bytes >= kMinStreamingBytes;
  return UploadChunking{chunk, forced_slots > 0 ? forced_slots : kSlots, streaming};
}

namespace {

/// Whether an upload of `bytes` uses other threads (its packers, the overlap helper for its destination).
bool worth_threads(size_t bytes) { return bytes >= kMinOverlapBytes || g_chunk_override.load() > 0; }

bool page_locked(const void* host) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, host) != cudaSuccess) {
    cudaGetLastError();  // pageable memory on an old runtime: not an error to keep
    return false;
  }
  return a.type == cudaMemoryTypeHost;  // cudaHostAlloc'd or cudaHostRegister'ed (pageable: Unregistered)
}

}  // namespace

struct HostUpload::Impl {
  HostRows rows;
  bool direct = false;  ///< rows in page-locked memory: copied where they are
  bool streaming = false;  ///< packed with streaming stores
  std::vector<int64_t> starts;
  size_t slot_bytes = 0;
  std::optional<SlotsLease> lease;
  std::vector<Slot*> slots;            ///< the lease's slots this upload uses (chunk c: slots[c % size])
  std::unique_ptr<ChunkPack> packing;  ///< destroyed (stopped) before the lease gives the slots back
  bool ran = false;
  UploadTimes times;
  Clock::time_point made;  ///< when the constructor started
  Clock::time_point constructed;  ///< when it returned
};

HostUpload::HostUpload(const HostRows& rows) : impl_(std::make_unique<Impl>()) {
  Impl& u = *impl_;
  u.made = Clock::now();
  u.rows = rows;
  if (rows.rows == 0 || rows.row_bytes == 0) return;
  struct Done {  // the constructor's time, however it returns
    Impl& u;
    ~Done() {
      u.constructed = Clock::now();
      u.times.construct_ms = std::chrono::duration<double, std::milli>(u.constructed - u.made).count();
    }
  } done{u};
  // Rows the caller keeps in page-locked memory (a pinned torch tensor, its own cudaHostAlloc) are copied from
  // where they are: no pack, the link's full bandwidth. Still chunked, so that the consumer's work overlaps.
  u.direct = page_locked(rows.data);
  const UploadChunking cut = upload_chunking(static_cast<size_t>(rows.rows) * rows.row_bytes, rows.row_bytes);
  const int64_t chunk_rows = static_cast<int64_t>(cut.chunk_bytes / rows.row_bytes);
  // Every upload of many chunks ramps up from a small chunk (its first copy starts after a short pack: a full first
  // chunk kept the copy engine idle for 0.8-1.4 ms of an Index add on one H100 host) and down to one (the last
  // chunk's device work after the last copy is short). Rows copied where they are need no pack: no ramp up (it only
  // adds chunks).
  const int ramp = g_ramp_override.load();
  u.starts = chunk_starts(rows.rows, chunk_rows, rows.row_bytes, ramp == 2 ? cut.chunk_bytes : kRampBytes,
                          !u.direct && ramp == 0);
  const int used = static_cast<int>(std::min<int64_t>(cut.slots, static_cast<int64_t>(u.starts.size()) - 1));
  u.slot_bytes = static_cast<size_t>(std::min(chunk_rows, rows.rows)) * rows.row_bytes;
  u.lease.emplace();
  UploadSlots& set = **u.lease;
  while (static_cast<int>(set.slots.size()) < used) set.slots.push_back(std::make_unique<Slot>());
  for (int s = 0; s < used; ++s) u.slots.push_back(set.slots[static_cast<size_t>(s)].get());
  if (u.direct) return;
  const bool wc = g_write_combined.load();
  u.streaming = cut.streaming;
  // The slots that lack pinned bytes (grown, never shrunk) are made together (their pages faulted in at once).
  std::vector<Slot*> lacking;
  size_t grown = u.slot_bytes;
  for (Slot* slot : u.slots) {
    slot->wait_copied();  // an earlier upload's last copy from it (finished: its caller synchronised)
    if (slot->lacks_host(u.slot_bytes, wc)) {
      if (slot->write_combined == wc) grown = std::max(grown, slot->pinned.bytes);
      lacking.push_back(slot);
    }
  }
  if (!lacking.empty()) {
    const Clock::time_point t0 = Clock::now();
    for (Slot* slot : lacking) slot->free_host();
    std::vector<PinnedBytes> made = make_pinned(lacking.size(), grown, wc, &u.times);
    for (size_t i = 0; i < lacking.size(); ++i) lacking[i]->set_host(made[i], wc);
    u.times.pin_ms = ms_since(t0);
  }
  int device = 0;
  GKNN_CUDA_TRY(cudaGetDevice(&device));
  // The caller's core issues the copies; the packers take the rest of its team.
  const int packers = std::min(host_team() - 1, packer_cap());
  if (packers < 1 || !worth_threads(static_cast<size_t>(rows.rows) * rows.row_bytes)) return;
  std::vector<unsigned char*> hosts;
  for (Slot* slot : u.slots) hosts.push_back(slot->pinned.p);
  // A packer's wait for a slot's last copy: its event (recorded before the chunk was issued), on the upload's device.
  auto wait_copied = [device, slots = u.slots](size_t s) {
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaEventSynchronize(slots[s]->copied.get());
    return static_cast<int>(e);
  };
  const Clock::time_point t0 = Clock::now();
  const int team_before = async_team_threads();
  auto packing = std::make_unique<ChunkPack>(rows, u.starts, std::move(hosts), packers, wait_copied, u.streaming);
  u.times.packers_ms = ms_since(t0);
  u.times.threads_created = async_team_threads() - team_before;
  if (packing->started()) u.packing = std::move(packing);
}

HostUpload::~HostUpload() = default;

void HostUpload::run(void* dst, cudaStream_t copy, cudaStream_t consumer,
                     const std::function<void(const UploadChunk&)>& on_chunk, const std::function<void*()>& prepare) {
  Impl& u = *impl_;
  if (u.ran || u.starts.size() < 2) return;
  u.ran = true;
  const Clock::time_point run_start = Clock::now();
  UploadTimes& times = u.times;
  times.chunks = static_cast<int64_t>(u.starts.size()) - 1;
  times.slots = static_cast<int>(u.slots.size());
  times.slot_bytes = static_cast<int64_t>(u.slot_bytes);
  times.packers = u.packing != nullptr;
  times.streaming = u.streaming;
  const HostRows& rows = u.rows;
  const int64_t chunks = static_cast<int64_t>(u.starts.size()) - 1;
  const int64_t used = static_cast<int64_t>(u.slots.size());
  void* dest = dst;    // where rows land in place (null: each chunk in its device slot)
  int64_t handed = 0;  // rows before it were handed to on_chunk (in place)
  // The timeline, when asked for (gknn_upload_bench; upload.cuh UploadTimeline).
  std::optional<TimelineRecorder> tl;
  if (g_timeline_on.load(std::memory_order_relaxed)) tl.emplace(chunks, u.made, u.constructed, run_start, copy);
  // The destination made beside the first copies (into device slots), on the overlap helper.
  void* prepared = nullptr;
  std::optional<OverlapJob> helper;
  Clock::time_point prepare_start, prepare_end;
  auto timed_prepare = [&] {
    prepare_start = Clock::now();
    void* made = prepare();
    prepare_end = Clock::now();
    times.prepare_ms = std::chrono::duration<double, std::milli>(prepare_end - prepare_start).count();
    return made;
  };
  // Waits for the helper's destination (rethrowing what prepare threw).
  auto join_helper = [&] {
    const Clock::time_point t0 = Clock::now();
    helper->join();
    helper.reset();
    times.prepare_wait_ms = ms_since(t0);
    if (tl) tl->t().helper_joined = Clock::now();
    dest = prepared;
  };
  // The chunk that holds `row` (for the timeline's work).
  auto chunk_of = [&](int64_t row) {
    return static_cast<int64_t>(std::upper_bound(u.starts.begin(), u.starts.end(), row) - u.starts.begin()) - 1;
  };
  if (prepare) {
    if (worth_threads(static_cast<size_t>(rows.rows) * rows.row_bytes) && !prepare_first())
      helper.emplace([&] { prepared = timed_prepare(); });
    times.prepare_beside = helper && helper->started();
    if (!times.prepare_beside) {
      helper.reset();
      dest = timed_prepare();
      if (tl) tl->t().helper_joined = prepare_end;
    }
  }
  if (!dest || helper) {
    const Clock::time_point t0 = Clock::now();
    for (Slot* slot : u.slots) slot->reserve_device(u.slot_bytes);
    times.device_slots_ms = ms_since(t0);
  }
  auto rows_at = [&](int64_t c) { return u.starts[static_cast<size_t>(c)]; };
  auto bytes_of = [&](int64_t c) { return static_cast<size_t>(rows_at(c + 1) - rows_at(c)) * rows.row_bytes; };
  // Where each chunk lands when not in place: a device slot and an offset in it. The chunks copied while the
  // destination is made (the early ones, before `early`) fill the device slots one after another, the ramp's small
  // ones several to a slot, so that they cover about as many bytes as one full chunk per slot (an Index's first add
  // of 1M x 128 floats: 63.5 MiB of copies beside the 512 MB cudaMalloc), each at a 256-byte boundary (the byte
  // conversion reads 4 bytes at once); later chunks take the slots in turn, one a slot, from the one after the last
  // early chunk's.
  struct Landing {
    int64_t slot = 0;
    size_t at = 0;
  };
  std::vector<Landing> landing(static_cast<size_t>(chunks));
  int64_t early = 0;
  if (helper) {
    Landing next;
    for (; early < chunks; ++early) {
      next.at = (next.at + kLandingAlign - 1) / kLandingAlign * kLandingAlign;
      if (next.at + bytes_of(early) > u.slot_bytes) next = Landing{next.slot + 1, 0};
      if (next.slot == used) break;
      landing[static_cast<size_t>(early)] = next;
      next.at += bytes_of(early);
    }
  }
  for (int64_t c = early, s = early > 0 ? landing[static_cast<size_t>(early - 1)].slot + 1 : 0; c < chunks; ++c, ++s)
    landing[static_cast<size_t>(c)] = Landing{s % used, 0};
  times.early_chunks = early;
  times.early_bytes = early > 0 ? static_cast<int64_t>(static_cast<size_t>(rows_at(early)) * rows.row_bytes) : 0;
  // Rows [handed, end) are in place: their work, once their copies (the latest one's event covers them) are in.
  auto hand_in_place = [&](Slot& latest, int64_t end) {
    GKNN_CUDA_TRY(cudaStreamWaitEvent(consumer, latest.copied.get(), 0));
    const size_t w = tl ? tl->begin_work(chunk_of(handed), chunk_of(end - 1), false, consumer) : 0;
    on_chunk(UploadChunk{static_cast<unsigned char*>(dest) + static_cast<size_t>(handed) * rows.row_bytes,
                         handed, end - handed});
    if (tl) tl->end_work(w, consumer);
    handed = end;
  };
  // Chunk c, in its device slot: moved into place (in-place uploads) or handed as it is, once the copy of chunk
  // `after` (>= c) has landed: its pinned slot's event covers it (copies run in order on one stream), recorded
  // again, when the early chunks are handed, by the last early chunk of that slot (a later copy: it covers chunk c's
  // too).
  auto hand_from_slot = [&](int64_t c, bool last, int64_t after) {
    Slot& copied = *u.slots[static_cast<size_t>(after % used)];
    const Landing& l = landing[static_cast<size_t>(c)];
    Slot& slot = *u.slots[static_cast<size_t>(l.slot)];
    unsigned char* landed = slot.device.data() + l.at;
    const int64_t first = rows_at(c), count = rows_at(c + 1) - first;
    GKNN_CUDA_TRY(cudaStreamWaitEvent(consumer, copied.copied.get(), 0));
    const size_t w = tl ? tl->begin_work(c, c, dest != nullptr, consumer) : 0;
    if (dest)
      GKNN_CUDA_TRY(cudaMemcpyAsync(static_cast<unsigned char*>(dest) + static_cast<size_t>(first) * rows.row_bytes,
                                    landed, static_cast<size_t>(count) * rows.row_bytes, cudaMemcpyDeviceToDevice,
                                    consumer));
    else
      on_chunk(UploadChunk{landed, first, count});
    if (tl) tl->end_work(w, consumer);
    slot.consumed.record(consumer);
    slot.consume_pending = true;
    if (dest && last) hand_in_place(copied, first + count);
  };
  // The early chunks [0, end), handed by device slot: those that share one (the ramp's small ones) after the copy of
  // the last of them, whose pinned slot's event is still that copy's where it is the last early chunk of its slot
  // (the ramp's last chunk into the first device slot, then one chunk a slot). So the consumer frees the first
  // device slot, which the first later chunk lands in, after about one slot's bytes of copies, not after every early
  // chunk's (an 8-bit add: chunk 0's work waited for the copy of chunk 4 and chunk 3's for chunk 7's, the last
  // early one, and the copy engine idled until the small chunks' conversions had run after it).
  auto hand_early = [&](int64_t end) {
    for (int64_t d = 0, group_end = 0; d < end; ++d) {
      if (d >= group_end) {
        group_end = d + 1;
        while (group_end < end && landing[static_cast<size_t>(group_end)].slot == landing[static_cast<size_t>(d)].slot)
          ++group_end;
      }
      hand_from_slot(d, d + 1 == end, group_end - 1);
    }
  };
  for (int64_t c = 0; c < chunks; ++c) {
    if (helper && c == early) {  // the device slots are full: the chunks before c are handed first
      join_helper();
      hand_early(c);
    }
    const int64_t first = rows_at(c), count = rows_at(c + 1) - first;
    const size_t bytes = static_cast<size_t>(count) * rows.row_bytes;
    Slot& slot = *u.slots[static_cast<size_t>(c % used)];  // its pinned bytes (and events of the copy)
    if (u.packing) {
      GKNN_CUDA_TRY(static_cast<cudaError_t>(u.packing->wait_packed(c)));  // its packers waited for the slot's copy
    } else {
      // The slot's last copy (chunk c - used, or an earlier upload's on another stream) has finished: its pinned
      // bytes may be written, and its event recorded again without losing track of that copy.
      slot.wait_copied();
      if (!u.direct) pack(slot.pinned.p, rows, first, count, u.streaming);
    }
    if (c == 0) times.first_packed_ms = ms_since(run_start);
    if (tl) tl->t().chunks[static_cast<size_t>(c)].ready = Clock::now();
    const bool in_place = dest && !helper;
    Slot& lands = *u.slots[static_cast<size_t>(landing[static_cast<size_t>(c)].slot)];
    void* target = in_place ? static_cast<unsigned char*>(dest) + static_cast<size_t>(first) * rows.row_bytes
                            : lands.device.data() + landing[static_cast<size_t>(c)].at;
    // The consumer's work on what this device slot held before must have read it (early chunks: an earlier
    // upload's work, if any).
    if (!in_place && lands.consume_pending) GKNN_CUDA_TRY(cudaStreamWaitEvent(copy, lands.consumed.get(), 0));
    if (tl) tl->copy_start(c, copy);
    if (u.direct && rows.stride_bytes == rows.row_bytes)  // one 1-D copy (below: a 2-D copy's lines of row_bytes)
      GKNN_CUDA_TRY(cudaMemcpyAsync(target,
                                    static_cast<const unsigned char*>(rows.data) +
                                        static_cast<size_t>(first) * rows.row_bytes,
                                    bytes, cudaMemcpyHostToDevice, copy));
    else if (u.direct)
      GKNN_CUDA_TRY(cudaMemcpy2DAsync(target, rows.row_bytes,
                                      static_cast<const unsigned char*>(rows.data) +
                                          static_cast<size_t>(first) * rows.stride_bytes,
                                      rows.stride_bytes, rows.row_bytes, static_cast<size_t>(count),
                                      cudaMemcpyHostToDevice, copy));
    else
      GKNN_CUDA_TRY(cudaMemcpyAsync(target, slot.pinned.p, bytes, cudaMemcpyHostToDevice, copy));
    if (tl) {
      tl->copy_end(c, copy);
      UploadTimeline::Chunk& k = tl->t().chunks[static_cast<size_t>(c)];
      k.issued = Clock::now();
      k.first_row = first;
      k.rows = count;
      k.bytes = static_cast<int64_t>(bytes);
      k.in_slot = !in_place;
    }
    slot.copied.record(copy);
    slot.copy_pending = true;
    if (u.packing) u.packing->issued(c);
    if (c == 0) times.first_issued_ms = ms_since(run_start);
    if (helper) continue;  // handed once the destination is made
    if (!in_place) {  // each chunk in its device slot: its work now, before the slot is written again
      hand_from_slot(c, false, c);
    } else {
      // Rows in their place: the work of several chunks at once (one wait, one launch per kernel instead of one per
      // chunk: those host calls would otherwise add ~10% to a pack that keeps pace with the copy). Copies run in
      // order on `copy`, so the latest chunk's event covers the group. The last 32 MiB (the ramp down) are handed
      // chunk by chunk, so that after the last copy only the last (smallest) chunk's work remains.
      const int64_t end = first + count;
      if (c + 1 == chunks || static_cast<size_t>(end - handed) * rows.row_bytes >= kConsumerGroupBytes ||
          static_cast<size_t>(rows.rows - end) * rows.row_bytes < kConsumerGroupBytes)
        hand_in_place(slot, end);
    }
  }
  if (helper) {  // every chunk went to a device slot before the destination was made
    join_helper();
    hand_early(chunks);
  }
  u.packing.reset();  // every part is packed: the packers have left, the team is free for the next upload
  if (tl) {
    UploadTimeline& t = tl->t();
    t.prepare_start = prepare_start;
    t.prepare_end = prepare_end;
    t.last_issued = t.chunks.back().issued;
    tl->keep();
  }
  times.run_ms = ms_since(run_start);
  times.total_ms = ms_since(u.made);
  std::lock_guard<std::mutex> lock(g_times_mutex);
  g_last_times = times;
}

void upload_host_rows(const HostRows& rows, void* dst, cudaStream_t copy, cudaStream_t consumer,
                      const std::function<void(const UploadChunk&)>& on_chunk) {
  HostUpload(rows).run(dst, copy, consumer, on_chunk);
}

void convert_bytes_to_floats(const unsigned char* src, int64_t count, float* dst, cudaStream_t s) {
  if (count <= 0) return;
  constexpr int kThreads = 256;
  const int64_t quads = (count + 3) / 4;
  const int64_t blocks = std::min<int64_t>((quads + kThreads - 1) / kThreads, 8192);
  bytes_to_floats_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(src, count, dst);
  GKNN_CUDA_CHECK_LAUNCH();
}

void load_byte_conversion() {
  cudaFuncAttributes attributes{};
  GKNN_CUDA_TRY(cudaFuncGetAttributes(&attributes, bytes_to_floats_kernel));
}

void release_upload_slots() {
  idle_pool<std::unique_ptr<UploadSlots>>().drain();  // the destructors wait for pending copies and free the slots
  std::lock_guard<std::mutex> lock(g_timeline_mutex);  // the timelines' events
  if (g_timeline) give_back_events(*g_timeline);
  g_timeline.reset();
  for (auto& [device, pool] : g_timeline_pool)
    for (cudaEvent_t e : pool) GKNN_CUDA_TRY_NOTHROW(cudaEventDestroy(e));
  g_timeline_pool.clear();
  trim_device_pools();  // the freed Index rows the pools keep (buffer.cuh PooledDeviceMemory)
}

}  // namespace gknn::detail::cuda
