// host_parallel.hpp: the host-side parallel loops on a search call's path (value scan of the queries, copies into
// and out of pinned staging), on a pool of threads of gknn's own.
//
// Why not OpenMP regions: libgomp keeps the threads of the calling thread's last team, but a region with fewer
// threads (other than one) ends the extra ones and the next larger region starts new ones (pthread_create). A
// scan on 16 threads followed by a 2-thread copy thus created 14 threads per search call: 1.9 ms of a 2.9 ms
// search on the H100's host. And a team kept at one size spins on every core for milliseconds after each region
// (GOMP_SPINCOUNT), while the host waits for the device: Garcia's search then took 12 ms. The pool's threads are
// started once, woken one by one, as many as a job has parts (a job of 4 parts wakes 3), spin 50 us after a job
// and then sleep. Work is cut into as many parts as its size pays for; one part runs on the caller alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string_view>
#include <vector>

namespace gknn::detail {

/// Threads a host_parallel job may use, the caller's included, and the CPU backend's default: OpenMP's default team
/// size of the calling thread (omp_get_max_threads(): OMP_NUM_THREADS and omp_set_num_threads apply), at most the
/// CPUs of the process's CPU quota (cgroups) where OMP_NUM_THREADS is not set: a container may see 32 cores and be
/// allowed the time of 16, and threads past the quota spin or wait for throttled time instead of working.
int host_team();

/// The CPUs the process's cgroup CPU quota allows (quota / period, rounded up), or 0 where there is none: cgroup v2
/// (/sys/fs/cgroup/cpu.max), else v1 (cpu.cfs_quota_us and cpu.cfs_period_us). Read once.
int cpu_quota_cpus();
/// The machine's hardware threads, at most the CPU quota's CPUs: what the MPI ranks of a host and the join's CPU
/// workers share.
int usable_cpus();
/// The same from the text of a cgroup v2 cpu.max file ("max 100000", "1600000 100000"); 0 for none or bad text.
int quota_cpus_of_cpu_max(std::string_view text);

/// How many parts `work` units make when a part should hold at least `min_per_part` units: in [1, host_team()].
int host_parts(int64_t work, int64_t min_per_part);

/// Runs body(part) for every part in [0, min(parts, host_team())): on the caller and the pool's threads, or on
/// the caller alone when another thread's job holds the pool (no waiting, no nesting). body must not throw.
void host_parallel(int parts, void (*body)(void* context, int part), void* context);

template <class Body>
void host_parallel(int parts, Body&& body) {
  host_parallel(
      parts, [](void* c, int part) { (*static_cast<Body*>(c))(part); }, static_cast<void*>(&body));
}

/// body(i) for every i in [0, count), in contiguous ranges on host_parallel's pool: as many ranges as
/// `count * cost_per_item` units pay for at `min_per_part` units a range, at most `max_threads` (0: the host team).
/// For the short loops of a search's host side, where an OpenMP team's spinning threads cost more than the loop
/// (finalize.cpp says how much). body may throw: the lowest range's exception is rethrown here, after every range
/// ended (a range stops at its first exception).
template <class Body>
void host_for(int64_t count, int64_t cost_per_item, int64_t min_per_part, int max_threads, Body&& body) {
  const int team = max_threads > 0 ? std::min(max_threads, host_team()) : host_team();
  const int parts = std::min(team, host_parts(count * std::max<int64_t>(cost_per_item, 1), min_per_part));
  const int64_t per_part = (count + parts - 1) / parts;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  host_parallel(parts, [&](int part) {
    try {
      const int64_t end = std::min(count, (part + 1) * per_part);
      for (int64_t i = part * per_part; i < end; ++i) body(i);
    } catch (...) {
      errors[static_cast<size_t>(part)] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

/// memcpy of `bytes` bytes in parts of at least `min_part` bytes on the pool (one thread reaches a fraction of the
/// host's copy bandwidth, and a destination touched for the first time also pays its page faults there).
/// `after_part` (optional, must not throw): called with each part's byte range [begin, end) by the thread that
/// copied it, right after (a staged upload issues that part's device copy there).
/// `min_part`: 512 KiB by default; a copy on a search's critical path may take smaller parts.
void parallel_memcpy(void* dst, const void* src, size_t bytes,
                     const std::function<void(size_t begin, size_t end)>& after_part = {},
                     size_t min_part = size_t(1) << 19);

/// One range of a copy made of several (parallel_memcpy_ranges).
struct CopyRange {
  void* dst;
  const void* src;
  size_t bytes;
};
/// memcpy of every range, as one job on the pool: the ranges' bytes are cut into parts of at least `min_part` bytes
/// as if they were one copy (a part may span two ranges), so that copying two arrays out (a result's values and
/// indices) wakes the pool's threads once, not once per array.
void parallel_memcpy_ranges(const CopyRange* ranges, int count, size_t min_part = size_t(1) << 19);

/// Rows [0, rows) of `cols` floats, `stride` floats apart, written contiguously as bytes to `dst` (rows x cols): each
/// value that is an integer of the byte's range ([0, 255], or [-128, 127] stored as its two's complement when
/// `is_signed`) exactly, anything else (a fraction, out of range, NaN) as 0, never undefined. Rows shared on the
/// pool in parts of at least 512 KiB of floats. The upload of integer-valued queries as a quarter of their bytes
/// (cuda/pipeline/staging.cuh), whose caller knows from the value facts that every value is such an integer.
void pack_rows_as_bytes(const float* rows, int64_t stride, int64_t row_count, int64_t cols, bool is_signed,
                        unsigned char* dst);

/// A task run on a helper thread of its own while the caller goes on (the scan of a search's queries while the
/// device searches them). One helper for the process, one task at a time: when another call's task holds it, the
/// task is not started (started() is false) and the caller does the work itself. The helper sleeps between tasks;
/// its wake-up is off the caller's path.
class OverlapJob {
 public:
  explicit OverlapJob(std::function<void()> task);
  /// Waits for a started task; rethrows what it threw.
  void join();
  bool started() const { return started_; }
  ~OverlapJob();  ///< joins a started task that was not joined (its exception is dropped: an error path is unwinding)
  OverlapJob(const OverlapJob&) = delete;
  OverlapJob& operator=(const OverlapJob&) = delete;

 private:
  bool started_ = false;
};

}  // namespace gknn::detail
