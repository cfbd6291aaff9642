// heap.hpp: bounded binary max-heap of the k best candidates (the thesis'/Tang et al.'s CPU baseline).
//
// The root is the worst kept candidate, so a new key is compared with one value and, when it loses (nearly
// always once the heap has warmed up), rejected without touching memory: O(n + k log k log(n/k)) per query.
#pragma once

#include <algorithm>
#include <vector>

#include "cpu/select/candidate.hpp"

namespace gknn::detail::cpu {

class HeapSelector {
 public:
  HeapSelector(int64_t k, int64_t /*expected_count*/) : k_(k) { heap_.reserve(static_cast<size_t>(k)); }

  void reset() { heap_.clear(); }

  template <class IndexOf>
  void push(const float* keys, int64_t count, IndexOf index_of) {
    int64_t c = 0;
    for (; c < count && static_cast<int64_t>(heap_.size()) < k_; ++c) {
      heap_.push_back({keys[c], index_of(c)});
      std::push_heap(heap_.begin(), heap_.end(), before);
    }
    for (; c < count; ++c) {
      const float key = keys[c];
      if (key > heap_[0].key) continue;  // cannot rank before the worst kept: the common, cheap case
      const Candidate candidate{key, index_of(c)};
      if (before(candidate, heap_[0])) replace_root(candidate);
    }
  }

  /// Writes the kept candidates (min(k, pushed)) in the total order; returns how many.
  int64_t finish(float* keys, int64_t* indices) {
    std::sort_heap(heap_.begin(), heap_.end(), before);
    for (size_t j = 0; j < heap_.size(); ++j) {
      keys[j] = heap_[j].key;
      indices[j] = heap_[j].index;
    }
    return static_cast<int64_t>(heap_.size());
  }

 private:
  /// Puts `c` at the root and sifts it down (cheaper than pop_heap + push_heap: one pass).
  void replace_root(const Candidate& c) {
    const size_t n = heap_.size();
    size_t at = 0;
    for (;;) {
      const size_t left = 2 * at + 1;
      if (left >= n) break;
      size_t worse = left;
      if (left + 1 < n && before(heap_[left], heap_[left + 1])) worse = left + 1;
      if (!before(c, heap_[worse])) break;
      heap_[at] = heap_[worse];
      at = worse;
    }
    heap_[at] = c;
  }

  int64_t k_;
  std::vector<Candidate> heap_;
};

}  // namespace gknn::detail::cpu
