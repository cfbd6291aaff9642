// sort.hpp: keep every key, sort them all, take the first k (the course report's sequential scan).
//
// The slowest selector, O(n log n) time and O(n) memory per query; kept as the baseline the report measures.
#pragma once

#include <algorithm>
#include <vector>

#include "cpu/select/candidate.hpp"

namespace gknn::detail::cpu {

class SortSelector {
 public:
  SortSelector(int64_t k, int64_t expected_count) : k_(k) { all_.reserve(static_cast<size_t>(expected_count)); }

  void reset() { all_.clear(); }

  template <class IndexOf>
  void push(const float* keys, int64_t count, IndexOf index_of) {
    for (int64_t c = 0; c < count; ++c) all_.push_back({keys[c], index_of(c)});
  }

  int64_t finish(float* keys, int64_t* indices) {
    std::sort(all_.begin(), all_.end(), before);
    const int64_t kept = std::min<int64_t>(k_, static_cast<int64_t>(all_.size()));
    for (int64_t j = 0; j < kept; ++j) {
      keys[j] = all_[size_t(j)].key;
      indices[j] = all_[size_t(j)].index;
    }
    return kept;
  }

 private:
  int64_t k_;
  std::vector<Candidate> all_;
};

}  // namespace gknn::detail::cpu
