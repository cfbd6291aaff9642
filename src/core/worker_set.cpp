// worker_set.cpp: see worker_set.hpp.
#include "core/worker_set.hpp"

#include <thread>

#include "core/spin_wait.hpp"

namespace gknn::detail {

int WorkerSet::grow(int n) {
  while (static_cast<int>(workers_.size()) < n) {
    try {
      auto w = std::make_unique<Worker>();
      std::thread([this, raw = w.get(), index = workers_.size()] { loop(index, *raw); }).detach();
      workers_.push_back(std::move(w));
      made_.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      break;  // fewer threads than asked (a thread that did not start never sees a job)
    }
  }
  return static_cast<int>(workers_.size());
}

void WorkerSet::start(int woken, void (*job)(void*, int), void* context) {
  job_ = job;
  context_ = context;
  woken_ = static_cast<size_t>(woken);
  remaining_.store(woken, std::memory_order_relaxed);
  // Last index first: a worker that sees its epoch (a spinning one sees it at once) then finds its children's, whose
  // indices are larger, bumped already. In index order, worker 0 could wake a sleeping child before its epoch moved:
  // the child sleeps again, nothing wakes it after the bump, and the job waits for it forever.
  for (int i = woken - 1; i >= 0; --i) workers_[static_cast<size_t>(i)]->epoch.fetch_add(1, std::memory_order_release);
  workers_[0]->epoch.notify_one();  // the others are woken down the tree (a spinning one sees its epoch itself)
}

void WorkerSet::wait() {
  wait_until(remaining_, [](int left) { return left == 0; });
}

void WorkerSet::loop(size_t index, Worker& w) {
  for (uint32_t seen = 0;;) {
    seen = wait_change(w.epoch, seen);
    for (size_t child = 2 * index + 1; child <= 2 * index + 2 && child < woken_; ++child)
      workers_[child]->epoch.notify_one();
    job_(context_, static_cast<int>(index));
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
  }
}

}  // namespace gknn::detail
