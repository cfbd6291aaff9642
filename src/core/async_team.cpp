// async_team.cpp: the process's async team (async_team.hpp).
#include "core/async_team.hpp"

#include <algorithm>
#include <atomic>

#include "core/worker_set.hpp"

namespace gknn::detail {
namespace {

/// Never destroyed (its threads may still sleep at exit). `busy_` is held from a job's start to its join, so only
/// that job's caller touches the workers and the job's fields. Each woken worker runs the body once (worker_set.hpp
/// wakes them down a tree, so the caller goes on at once: an add's cudaMalloc).
class Team {
 public:
  /// Wakes up to `threads` workers for body(context); false (nothing started) when the team is busy or has no
  /// thread.
  bool start(int threads, void (*body)(void*), void* context) {
    if (threads < 1 || busy_.exchange(true, std::memory_order_acquire)) return false;
    const int woken = std::min(threads, workers_.grow(threads));
    if (woken == 0) {
      busy_.store(false, std::memory_order_release);
      return false;
    }
    body_ = body;
    context_ = context;
    workers_.start(woken, [](void* self, int) { static_cast<Team*>(self)->body_(static_cast<Team*>(self)->context_); },
                   this);
    return true;
  }

  int threads() const { return workers_.made(); }

  /// Waits for every woken worker to leave the job's body, then frees the team.
  void join() {
    workers_.wait();
    busy_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> busy_{false};
  WorkerSet workers_;
  void (*body_)(void*) = nullptr;
  void* context_ = nullptr;
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
