// async_team.cpp: the process's async team (async_team.hpp).
#include "core/async_team.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/spin_wait.hpp"

namespace gknn::detail {
namespace {

/// Never destroyed (its threads may still sleep at exit). `busy_` is held from a job's start to its join, so only
/// that job's caller touches the workers and the job's fields. The caller wakes one worker; worker i wakes workers
/// 2i + 1 and 2i + 2 (a futex call each): 15 packers are up after 4 wake-ups in a row, not after 15 calls on the
/// caller, which meanwhile goes on (an add's cudaMalloc).
class Team {
 public:
  /// Wakes up to `threads` workers for body(context); false (nothing started) when the team is busy or has no
  /// thread.
  bool start(int threads, void (*body)(void*), void* context) {
    if (threads < 1 || busy_.exchange(true, std::memory_order_acquire)) return false;
    while (static_cast<int>(workers_.size()) < threads) {
      try {
        auto w = std::make_unique<Worker>();
        std::thread([this, raw = w.get(), index = workers_.size()] { loop(index, *raw); }).detach();
        workers_.push_back(std::move(w));
        made_.fetch_add(1, std::memory_order_relaxed);
      } catch (...) {
        break;  // fewer threads than asked (a thread that did not start never sees a job)
      }
    }
    const int woken = std::min(threads, static_cast<int>(workers_.size()));
    if (woken == 0) {
      busy_.store(false, std::memory_order_release);
      return false;
    }
    body_ = body;
    context_ = context;
    woken_ = static_cast<size_t>(woken);
    remaining_.store(woken, std::memory_order_relaxed);
    for (int i = 0; i < woken; ++i) workers_[static_cast<size_t>(i)]->epoch.fetch_add(1, std::memory_order_release);
    workers_[0]->epoch.notify_one();  // the others are woken down the tree (a spinning one sees its epoch itself)
    return true;
  }

  int threads() const { return made_.load(std::memory_order_relaxed); }

  /// Waits for every woken worker to leave the job's body, then frees the team.
  void join() {
    wait_until(remaining_, [](int left) { return left == 0; });
    busy_.store(false, std::memory_order_release);
  }

 private:
  struct Worker {
    std::atomic<uint32_t> epoch{0};  ///< bumped once per job this worker is woken for
  };

  void loop(size_t index, Worker& w) {
    for (uint32_t seen = 0;;) {
      seen = wait_change(w.epoch, seen);
      for (size_t child = 2 * index + 1; child <= 2 * index + 2 && child < woken_; ++child)
        workers_[child]->epoch.notify_one();
      body_(context_);
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
    }
  }

  std::atomic<bool> busy_{false};
  std::vector<std::unique_ptr<Worker>> workers_;
  void (*body_)(void*) = nullptr;
  void* context_ = nullptr;
  size_t woken_ = 0;  ///< workers of the job: 0..woken_ - 1
  std::atomic<int> remaining_{0};
  std::atomic<int> made_{0};  ///< workers_.size(), readable beside a job
};

Team& team() {
  static Team* t = new Team;
  return *t;
}

}  // namespace

AsyncJob::AsyncJob(int threads, void (*body)(void*), void* context) : started_(team().start(threads, body, context)) {}

int async_team_threads() { return team().threads(); }

void AsyncJob::join() {
  if (!started_) return;
  team().join();
  started_ = false;
}

}  // namespace gknn::detail
