#include "core/host_parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <functional>
#include <mutex>
#include <thread>

#include <omp.h>

#include "core/worker_set.hpp"

namespace gknn::detail {

int quota_cpus_of_cpu_max(std::string_view text) {
  long long quota = 0, period = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%lld %lld", &quota, &period) != 2 || quota <= 0 || period <= 0) return 0;  // "max ..."
  return static_cast<int>(std::min<long long>((quota + period - 1) / period, 1 << 20));
}

namespace {

std::string read_text(const char* path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

int read_quota_cpus() {
  if (std::string v2 = read_text("/sys/fs/cgroup/cpu.max"); !v2.empty()) return quota_cpus_of_cpu_max(v2);
  for (const char* dir : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    const std::string quota = read_text((std::string(dir) + "/cpu.cfs_quota_us").c_str());
    const std::string period = read_text((std::string(dir) + "/cpu.cfs_period_us").c_str());
    if (!quota.empty() && !period.empty()) return quota_cpus_of_cpu_max(quota + " " + period);
  }
  return 0;
}

}  // namespace

int cpu_quota_cpus() {
  static const int cpus = read_quota_cpus();
  return cpus;
}

int usable_cpus() {
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int quota = cpu_quota_cpus();
  return quota > 0 ? std::min(hardware, quota) : hardware;
}

int host_team() {
  static const bool threads_set = std::getenv("OMP_NUM_THREADS") != nullptr;
  const int team = std::max(1, omp_get_max_threads());
  const int quota = threads_set ? 0 : cpu_quota_cpus();
  return quota > 0 ? std::min(team, quota) : team;
}

int host_parts(int64_t work, int64_t min_per_part) {
  const int64_t parts = work / std::max<int64_t>(1, min_per_part);
  return static_cast<int>(std::clamp<int64_t>(parts, 1, host_team()));
}

namespace {

/// Runs a job's parts on the caller and on up to parts - 1 workers of its WorkerSet (worker_set.hpp), each taking
/// parts until none is left; the caller returns only when every woken worker has left the job, so no worker still
/// reads a job's body or context after its call returned. Never destroyed (threads may still sleep at exit).
class Pool {
 public:
  /// false when another caller's job is running (the caller then runs the parts itself: no waiting, no nesting).
  bool run(int parts, void (*body)(void*, int), void* context) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    const int woken = std::min(parts - 1, workers_.grow(parts - 1));  // the caller takes the parts they leave
    body_ = body;
    context_ = context;
    parts_ = parts;
    next_.store(1, std::memory_order_relaxed);
    if (woken > 0) workers_.start(woken, [](void* self, int) { static_cast<Pool*>(self)->take_parts(); }, this);
    body(context, 0);
    take_parts();
    if (woken > 0) workers_.wait();
    return true;
  }

 private:
  void take_parts() {
    for (int part = next_.fetch_add(1, std::memory_order_relaxed); part < parts_;
         part = next_.fetch_add(1, std::memory_order_relaxed))
      body_(context_, part);
  }

  std::mutex mutex_;
  WorkerSet workers_;
  void (*body_)(void*, int) = nullptr;
  void* context_ = nullptr;
  int parts_ = 0;
  std::atomic<int> next_{0};
};

Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void host_parallel(int parts, void (*body)(void*, int), void* context) {
  parts = std::clamp(parts, 1, host_team());
  if (parts > 1 && pool().run(parts, body, context)) return;
  for (int part = 0; part < parts; ++part) body(context, part);
}

namespace {

/// The helper thread of OverlapJob. `owned` is taken by one job from its start to its join.
struct OverlapHelper {
  std::mutex mutex;
  std::condition_variable wake;
  std::function<void()> task;
  std::exception_ptr error;
  bool owned = false, pending = false, finished = false;

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [this] { return pending; });
      pending = false;
      std::function<void()> work = std::move(task);
      lock.unlock();
      std::exception_ptr e;
      try {
        work();
      } catch (...) {
        e = std::current_exception();
      }
      lock.lock();
      error = e;
      finished = true;
      wake.notify_all();
    }
  }
};

/// Started on first use, never destroyed (the thread sleeps at exit); null when the thread could not be started.
OverlapHelper* overlap_helper() {
  static OverlapHelper* helper = [] {
    auto* h = new OverlapHelper;
    try {
      std::thread([h] { h->loop(); }).detach();
    } catch (...) {
      return static_cast<OverlapHelper*>(nullptr);
    }
    return h;
  }();
  return helper;
}

}  // namespace

OverlapJob::OverlapJob(std::function<void()> task) {
  OverlapHelper* h = overlap_helper();
  if (!h) return;
  std::lock_guard<std::mutex> lock(h->mutex);
  if (h->owned) return;
  h->owned = true;
  h->finished = false;
  h->error = nullptr;
  h->task = std::move(task);
  h->pending = true;
  h->wake.notify_all();
  started_ = true;
}

void OverlapJob::join() {
  if (!started_) return;
  OverlapHelper& h = *overlap_helper();
  std::unique_lock<std::mutex> lock(h.mutex);
  h.wake.wait(lock, [&h] { return h.finished; });
  std::exception_ptr e = h.error;
  h.error = nullptr;
  h.owned = false;
  started_ = false;
  lock.unlock();
  if (e) std::rethrow_exception(e);
}

OverlapJob::~OverlapJob() {
  try {
    join();
  } catch (...) {
  }
}

void parallel_memcpy(void* dst, const void* src, size_t bytes,
                     const std::function<void(size_t begin, size_t end)>& after_part, size_t min_part) {
  const int parts = host_parts(static_cast<int64_t>(bytes), static_cast<int64_t>(std::max<size_t>(min_part, 1)));
  if (parts == 1) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    if (bytes > 0 && after_part) after_part(0, bytes);
    return;
  }
  const size_t chunk = (bytes + parts - 1) / parts;
  host_parallel(parts, [&](int part) {
    const size_t begin = std::min(bytes, static_cast<size_t>(part) * chunk), end = std::min(bytes, begin + chunk);
    if (end <= begin) return;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
    if (after_part) after_part(begin, end);
  });
}

void parallel_memcpy_ranges(const CopyRange* ranges, int count, size_t min_part) {
  size_t total = 0;
  for (int r = 0; r < count; ++r) total += ranges[r].bytes;
  const int parts = host_parts(static_cast<int64_t>(total), static_cast<int64_t>(std::max<size_t>(min_part, 1)));
  const size_t chunk = (total + parts - 1) / parts;
  // Part p copies bytes [p chunk, (p + 1) chunk) of the ranges laid end to end.
  auto copy_part = [&](int part) {
    const size_t begin = std::min(total, static_cast<size_t>(part) * chunk), end = std::min(total, begin + chunk);
    size_t at = 0;  // where range r starts in the joined bytes
    for (int r = 0; r < count && at < end; at += ranges[r].bytes, ++r) {
      const size_t lo = std::max(begin, at), hi = std::min(end, at + ranges[r].bytes);
      if (lo < hi)
        std::memcpy(static_cast<char*>(ranges[r].dst) + (lo - at), static_cast<const char*>(ranges[r].src) + (lo - at),
                    hi - lo);
    }
  };
  if (parts == 1) return copy_part(0);
  host_parallel(parts, [&](int part) { copy_part(part); });
}

namespace {

/// One row's bytes: the branch-free select keeps the loop vectorisable (a fraction truncates, which the caller's
/// facts rule out; it is defined either way).
template <bool Signed>
void pack_row_as_bytes(const float* src, int64_t cols, unsigned char* dst) {
  constexpr float lo = Signed ? -128.f : 0.f, hi = Signed ? 127.f : 255.f;
  for (int64_t c = 0; c < cols; ++c) {
    const float v = src[c];
    const int i = v >= lo && v <= hi ? static_cast<int>(v) : 0;  // NaN fails both tests
    dst[c] = static_cast<unsigned char>(i & 0xff);
  }
}

}  // namespace

void pack_rows_as_bytes(const float* rows, int64_t stride, int64_t row_count, int64_t cols, bool is_signed,
                        unsigned char* dst) {
  // 512 KiB of floats a part, as parallel_memcpy's parts (the float pack this replaces): Garcia's 2 MB of queries
  // make 4 parts, not 16 threads woken for ~5 us of work each.
  constexpr int64_t kMinPartValues = int64_t(1) << 17;
  host_for(row_count, cols, kMinPartValues, 0, [&](int64_t r) {
    if (is_signed) pack_row_as_bytes<true>(rows + r * stride, cols, dst + r * cols);
    else pack_row_as_bytes<false>(rows + r * stride, cols, dst + r * cols);
  });
}

}  // namespace gknn::detail
