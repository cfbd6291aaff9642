// idle_pool.hpp: what a call leases per device and gives back for the next call (pipelines, scan slots, cuBLAS
// handles): creating one costs device allocations or milliseconds, and concurrent callers each need their own.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace gknn::detail::cuda {

/// Idle T's per device behind one mutex. T is moved in and out (a unique_ptr, a handle).
template <class T>
class IdlePool {
 public:
  /// An idle T of `device`, removed from the pool, or nothing.
  std::optional<T> take(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<T>& idle = idle_[device];
    if (idle.empty()) return std::nullopt;
    std::optional<T> t(std::move(idle.back()));
    idle.pop_back();
    return t;
  }

  /// Keeps `t` (moved from) for `device` while fewer than `limit` are idle there; false, `t` untouched, otherwise,
  /// so that the caller destroys it outside the lock.
  bool give(int device, T& t, size_t limit = std::numeric_limits<size_t>::max()) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<T>& idle = idle_[device];
    if (idle.size() >= limit) return false;
    idle.push_back(std::move(t));
    return true;
  }

  /// Every idle T, removed from the pool (the caller destroys them outside the lock).
  std::map<int, std::vector<T>> drain() {
    std::map<int, std::vector<T>> out;
    std::lock_guard<std::mutex> lock(mutex_);
    out.swap(idle_);
    return out;
  }

 private:
  std::mutex mutex_;
  std::map<int, std::vector<T>> idle_;
};

/// The process's pool of T. Never destroyed: at process exit the CUDA runtime may already be gone (destroying a
/// stream or handle then races its teardown), and the driver releases a process's memory anyway;
/// release_cached_device_resources (cuda/hooks.hpp) drains the pools explicitly.
template <class T>
IdlePool<T>& idle_pool() {
  static auto* pool = new IdlePool<T>;
  return *pool;
}

}  // namespace gknn::detail::cuda
