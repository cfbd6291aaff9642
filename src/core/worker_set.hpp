// worker_set.hpp: threads made once and kept, that sleep between jobs (spin_wait.hpp) and run one job at a time:
// the mechanism under host_parallel's pool (core/host_parallel.cpp) and the async team (core/async_team.cpp).
//
// The caller wakes worker 0; worker i wakes workers 2i + 1 and 2i + 2 before it runs the job (a futex call each), so
// 15 workers are up after 4 wake-ups in a row, not after 15 calls on the caller.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace gknn::detail {

class WorkerSet {
 public:
  /// Makes workers until there are `n` (fewer when a thread cannot be made); returns how many there are.
  int grow(int n);
  /// Runs job(context, i) once on each worker i < woken (1 <= woken <= the workers made), beside the caller. One job
  /// at a time: the owner serialises start ... wait (its own lock or flag).
  void start(int woken, void (*job)(void* context, int worker), void* context);
  /// Waits until every worker of the started job has left it.
  void wait();
  /// Workers made so far; readable beside a job.
  int made() const { return made_.load(std::memory_order_relaxed); }

 private:
  struct Worker {
    std::atomic<uint32_t> epoch{0};  ///< bumped once per job this worker is woken for
  };
  void loop(size_t index, Worker& w);

  std::vector<std::unique_ptr<Worker>> workers_;
  void (*job_)(void*, int) = nullptr;
  void* context_ = nullptr;
  size_t woken_ = 0;  ///< workers of the job: 0..woken_ - 1
  std::atomic<int> remaining_{0};
  std::atomic<int> made_{0};
};

}  // namespace gknn::detail
