// shard_threads.hpp: runs one task per shard group on its own host thread, exceptions brought back.
#pragma once

#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "gknn/sharded_index.hpp"

namespace gknn::detail {

/// Which shards run on which host thread: shards that share a CUDA device run one after the other on one thread
/// (each sizes its working memory from the device's free memory); every CPU shard and every other device gets its
/// own thread. The group of shard 0 comes first (it runs on the caller's thread).
inline std::vector<std::vector<int>> device_groups(const std::vector<ShardDevice>& shards) {
  std::map<int, std::vector<int>> by_device;
  std::vector<std::vector<int>> groups;
  for (int s = 0; s < int(shards.size()); ++s) {
    if (shards[size_t(s)].backend == Backend::Cuda) by_device[shards[size_t(s)].device].push_back(s);
    else groups.push_back({s});
  }
  for (auto& [device, members] : by_device) groups.push_back(members);
  std::sort(groups.begin(), groups.end());
  return groups;
}

/// Runs task(0..count-1) concurrently: task 0 on the calling thread (so progress callbacks of the first group
/// arrive on the caller's thread), the others on their own threads. Waits for all, then rethrows the
/// exception of the lowest failing task.
inline void run_concurrently(int count, const std::function<void(int)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
  auto guarded = [&](int i) {
    try {
      task(i);
    } catch (...) {
      errors[size_t(i)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < count; ++i) threads.emplace_back(guarded, i);
  if (count > 0) guarded(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace gknn::detail
