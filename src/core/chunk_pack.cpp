// chunk_pack.cpp: packing host rows ahead of a chunked upload's copies (chunk_pack.hpp).
#include "core/chunk_pack.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/spin_wait.hpp"

namespace gknn::detail {
namespace {

/// Bytes of a packer's part: a chunk is shared by the packers in parts of at least kMinPartBytes (a part costs an
/// atomic or two and a look at its slot) and at most kMaxPartBytes (so that they balance).
constexpr size_t kMinPartBytes = size_t(64) << 10, kMaxPartBytes = size_t(1) << 20;

}  // namespace

void copy_rows(unsigned char* dst, const HostRows& rows, int64_t first, int64_t count) {
  const auto* src = static_cast<const unsigned char*>(rows.data) + static_cast<size_t>(first) * rows.stride_bytes;
  if (rows.stride_bytes == rows.row_bytes) {
    if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * rows.row_bytes);
    return;
  }
  for (int64_t r = 0; r < count; ++r)
    std::memcpy(dst + static_cast<size_t>(r) * rows.row_bytes, src + static_cast<size_t>(r) * rows.stride_bytes,
                rows.row_bytes);
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
                     int threads, std::function<int(size_t slot)> wait_copied)
    : rows_(rows),
      starts_(starts),
      slots_(std::move(slots)),
      wait_copied_(std::move(wait_copied)),
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
              rows_, p.first, p.count);
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
