// chunk_pack.cpp: packing host rows ahead of a chunked upload's copies (chunk_pack.hpp).
#include "core/chunk_pack.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/spin_wait.hpp"

namespace gknn::detail {
namespace {

/// Bytes of a packer's part: a chunk is shared by the packers in parts of at least kMinPartBytes (a part costs an
/// atomic or two and a look at its slot) and at most kMaxPartBytes (so that they balance).
constexpr size_t kMinPartBytes = size_t(64) << 10, kMaxPartBytes = size_t(1) << 20;

}  // namespace

namespace {

constexpr size_t kLine = 64;
constexpr size_t kStreamMinBytes = size_t(16) << 10;  ///< smaller copies: memcpy (the partial lines would dominate)
constexpr size_t kGatherBytes = size_t(8) << 10;      ///< strided rows of less than half this: gathered, then streamed

std::atomic<bool> g_pack_streaming{true};

#if defined(__SSE2__)
/// One 64-byte line: loaded as it is (any alignment), stored streaming (dst: 64-byte aligned).
inline void stream_line(unsigned char* dst, const unsigned char* src) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
}
#endif

/// dst[0, bytes) = src[0, bytes): the whole 64-byte lines of dst with streaming stores, the partial ones at either
/// end with memcpy. No fence (the caller fences once after several). In blocks of 16 KiB the lines go to 4 streams
/// 4 KiB apart in turn (glibc's large memcpy does the same: more DRAM pages open at once; on a 2-core Xeon VM, 1 MiB
/// parts into a 64 MiB ring by 2 threads: 21 GB/s, 18.6 in one stream, memcpy 19).
void stream_lines(unsigned char* dst, const unsigned char* src, size_t bytes) {
#if defined(__SSE2__)
  const size_t head = std::min(bytes, (kLine - (reinterpret_cast<uintptr_t>(dst) & (kLine - 1))) & (kLine - 1));
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  const size_t body = bytes & ~(kLine - 1);
  constexpr size_t kStreams = 4, kPage = 4096, kBlock = kStreams * kPage;
  size_t done = 0;
  for (; done + kBlock <= body; done += kBlock)
    for (size_t i = 0; i < kPage; i += kLine)
      for (size_t s = 0; s < kStreams; ++s) stream_line(dst + done + s * kPage + i, src + done + s * kPage + i);
  for (; done < body; done += kLine) stream_line(dst + done, src + done);
  std::memcpy(dst + body, src + body, bytes - body);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();  // streaming stores are weakly ordered: visible before any store after this
#endif
}

}  // namespace

void stream_copy(unsigned char* dst, const unsigned char* src, size_t bytes) {
  if (bytes < kStreamMinBytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return;
  }
  stream_lines(dst, src, bytes);
  store_fence();
}

void set_pack_streaming(bool on) { g_pack_streaming.store(on, std::memory_order_relaxed); }
bool pack_streaming() { return g_pack_streaming.load(std::memory_order_relaxed); }

size_t parse_cache_size(const char* text) {
  if (!text) return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text) return 0;
  size_t unit = 1;
  if (*end == 'K') unit = size_t(1) << 10, ++end;
  else if (*end == 'M') unit = size_t(1) << 20, ++end;
  else if (*end == 'G') unit = size_t(1) << 30, ++end;
  if (*end != '\0' && *end != '\n') return 0;
  return static_cast<size_t>(value) * unit;
}

size_t last_level_cache_bytes() {
  static const size_t bytes = [] {
    size_t largest = 0;
    for (int i = 0; i < 8; ++i) {
      const std::string path = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size";
      std::FILE* f = std::fopen(path.c_str(), "r");
      if (!f) break;
      char text[64] = {};
      if (std::fgets(text, sizeof text, f)) largest = std::max(largest, parse_cache_size(text));
      std::fclose(f);
    }
    return largest;
  }();
  return bytes;
}

void copy_rows(unsigned char* dst, const HostRows& rows, int64_t first, int64_t count, bool streaming) {
  if (count <= 0) return;
  const auto* src = static_cast<const unsigned char*>(rows.data) + static_cast<size_t>(first) * rows.stride_bytes;
  const size_t n = static_cast<size_t>(count), bytes = n * rows.row_bytes;
  if (rows.stride_bytes == rows.row_bytes) {
    if (streaming) stream_copy(dst, src, bytes);
    else std::memcpy(dst, src, bytes);
    return;
  }
  if (!streaming || bytes < kStreamMinBytes) {
    for (size_t r = 0; r < n; ++r) std::memcpy(dst + r * rows.row_bytes, src + r * rows.stride_bytes, rows.row_bytes);
    return;
  }
  if (2 * rows.row_bytes > kGatherBytes) {  // rows of >= 4 KiB: each streamed where it is
    for (size_t r = 0; r < n; ++r) stream_lines(dst + r * rows.row_bytes, src + r * rows.stride_bytes, rows.row_bytes);
  } else {
    // Small rows: gathered by memcpy into a buffer that stays in the L1 cache, which is streamed out whole (the
    // partial lines where two batches meet are written by ordinary stores from both: never a line half streamed).
    alignas(kLine) unsigned char gathered[kGatherBytes];
    const size_t per = kGatherBytes / rows.row_bytes;
    for (size_t r = 0; r < n; r += per) {
      const size_t m = std::min(per, n - r);
      for (size_t i = 0; i < m; ++i)
        std::memcpy(gathered + i * rows.row_bytes, src + (r + i) * rows.stride_bytes, rows.row_bytes);
      stream_lines(dst + r * rows.row_bytes, gathered, m * rows.row_bytes);
    }
  }
  store_fence();
}

std::vector<int64_t> chunk_starts(int64_t rows, int64_t chunk_rows, size_t row_bytes, size_t ramp_bytes,
                                  bool ramp_up) {
  std::vector<int64_t> ramp;
  int64_t ramp_rows = 0;
  for (int64_t r = std::max<int64_t>(1, static_cast<int64_t>(ramp_bytes / std::max<size_t>(1, row_bytes)));
       r < chunk_rows; r *= 2) {
    ramp.push_back(r);
    ramp_rows += r;
  }
  if (rows < 2 * (ramp_rows + chunk_rows)) {  // a few chunks: equal ones
    ramp.clear();
    ramp_rows = 0;
  }
  std::vector<int64_t> starts{0};
  auto add = [&](int64_t n) { starts.push_back(starts.back() + n); };
  if (ramp_up)
    for (int64_t r : ramp) add(r);
  const int64_t middle = rows - (ramp_up ? 2 : 1) * ramp_rows;
  for (int64_t at = 0; at < middle; at += chunk_rows) add(std::min(chunk_rows, middle - at));
  for (auto r = ramp.rbegin(); r != ramp.rend(); ++r) add(*r);
  return starts;
}

ChunkPack::ChunkPack(const HostRows& rows, const std::vector<int64_t>& starts, std::vector<unsigned char*> slots,
                     int threads, std::function<int(size_t slot)> wait_copied, bool streaming)
    : rows_(rows),
      starts_(starts),
      slots_(std::move(slots)),
      wait_copied_(std::move(wait_copied)),
      streaming_(streaming),
      packed_(new std::atomic<int64_t>[starts.size()]),
      free_(new std::atomic<int64_t>[slots_.size()]),
      claimed_(new std::atomic<int64_t>[slots_.size()]) {
  const int64_t chunks = static_cast<int64_t>(starts_.size()) - 1;
  const size_t threads_for_parts = static_cast<size_t>(std::max(1, threads));
  for (int64_t c = 0; c < chunks; ++c) {
    packed_[c].store(0, std::memory_order_relaxed);
    const int64_t count = starts_[c + 1] - starts_[c];
    const size_t bytes = static_cast<size_t>(count) * rows_.row_bytes;
    const size_t part_bytes = std::clamp(bytes / threads_for_parts, kMinPartBytes, kMaxPartBytes);
    const int64_t part_rows = std::max<int64_t>(1, static_cast<int64_t>(part_bytes / rows_.row_bytes));
    for (int64_t at = 0; at < count; at += part_rows)
      parts_.push_back(Part{c, starts_[c] + at, std::min(part_rows, count - at)});
  }
  for (size_t s = 0; s < slots_.size(); ++s) {
    free_[s].store(-1, std::memory_order_relaxed);
    claimed_[s].store(-1, std::memory_order_relaxed);
  }
  // No more threads than parts: a small upload wakes few.
  const int woken = static_cast<int>(std::min(static_cast<size_t>(std::max(0, threads)), parts_.size()));
  job_.emplace(woken, [](void* p) { static_cast<ChunkPack*>(p)->work(); }, this);
}

int ChunkPack::wait_packed(int64_t c) {
  const int64_t rows = starts_[static_cast<size_t>(c) + 1] - starts_[static_cast<size_t>(c)];
  // The caller packs the parts of chunk c no packer has taken yet: its pack starts at once, while the sleeping
  // packers are still being woken (a futex wake each, down the team's tree: a large share of a small add).
  for (size_t i = next_.load(std::memory_order_relaxed); !stop_.load(std::memory_order_acquire);) {
    if (i >= parts_.size() || parts_[i].chunk > c) break;
    if (next_.compare_exchange_weak(i, i + 1, std::memory_order_relaxed)) {
      pack_part(parts_[i], error_.load(std::memory_order_acquire));
      i = next_.load(std::memory_order_relaxed);
    }
  }
  wait_until(packed_[c], [rows](int64_t n) { return n == rows; });
  return error_.load(std::memory_order_acquire);
}

void ChunkPack::issued(int64_t c) {
  issued_.store(c + 1, std::memory_order_release);
  issued_.notify_all();
}

void ChunkPack::stop() {
  stop_.store(true, std::memory_order_release);
  issued_.store(std::numeric_limits<int64_t>::max(), std::memory_order_release);
  issued_.notify_all();
  job_->join();
}

void ChunkPack::work() {
  int err = 0;
  for (size_t i; !stop_.load(std::memory_order_acquire) && (i = next_.fetch_add(1)) < parts_.size();)
    if (!pack_part(parts_[i], err, &err)) return;
}

bool ChunkPack::pack_part(const Part& p, int err, int* err_out) {
  const int64_t slots = static_cast<int64_t>(slots_.size());
  const int64_t c = p.chunk;
  if (err == 0 && c >= slots) {
    // The caller (wait_packed(c)) has issued chunk c - 1 >= c - slots: it never waits here.
    wait_until(issued_, [&](int64_t n) { return n > c - slots; });
    if (stop_.load(std::memory_order_acquire)) return false;
    err = wait_slot_free(c);
  }
  if (err == 0)
    copy_rows(slots_[static_cast<size_t>(c % slots)] + static_cast<size_t>(p.first - starts_[c]) * rows_.row_bytes,
              rows_, p.first, p.count, streaming_);
  else
    keep_error(err);
  if (packed_[c].fetch_add(p.count, std::memory_order_acq_rel) + p.count == starts_[c + 1] - starts_[c])
    packed_[c].notify_all();
  if (err_out) *err_out = err;
  return true;
}

int ChunkPack::wait_slot_free(int64_t c) {
  // One packer of the chunk waits for the copy (wait_copied: a driver call), the others for that packer.
  const size_t s = static_cast<size_t>(c % static_cast<int64_t>(slots_.size()));
  if (free_[s].load(std::memory_order_acquire) < c) {
    if (claimed_[s].exchange(c, std::memory_order_acq_rel) != c) {
      if (const int e = wait_copied_(s); e != 0) keep_error(e);
      free_[s].store(c, std::memory_order_release);
      free_[s].notify_all();
    } else {
      wait_until(free_[s], [c](int64_t f) { return f >= c; });
    }
  }
  return error_.load(std::memory_order_acquire);
}

void ChunkPack::keep_error(int e) {
  int none = 0;
  error_.compare_exchange_strong(none, e, std::memory_order_acq_rel);
}

}  // namespace gknn::detail
