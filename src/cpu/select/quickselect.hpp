// quickselect.hpp: candidate buffer compacted by nth_element (quickselect) whenever it fills up.
//
// Candidates that rank before the current k-th best are appended; a full buffer is cut back to its k best
// with std::nth_element (linear time), which also tightens the rejection threshold. Compared with the heap
// this costs O(1) per accepted candidate instead of O(log k), so it wins for large k.
#pragma once

#include <algorithm>
#include <vector>

#include "cpu/select/candidate.hpp"

namespace gknn::detail::cpu {

class QuickselectSelector {
 public:
  /// The buffer holds k survivors plus as many new candidates again (at least kMinSlack): amortised O(1).
  static constexpr int64_t kMinSlack = 64;
  static int64_t capacity(int64_t k) { return k + std::max(k, kMinSlack); }

  QuickselectSelector(int64_t k, int64_t /*expected_count*/) : k_(k), capacity_(capacity(k)) {
    buffer_.reserve(static_cast<size_t>(capacity_));
  }

  void reset() {
    buffer_.clear();
    has_threshold_ = false;
  }

  template <class IndexOf>
  void push(const float* keys, int64_t count, IndexOf index_of) {
    for (int64_t c = 0; c < count; ++c) {
      const float key = keys[c];
      if (has_threshold_ && key > threshold_.key) continue;  // cheap reject, as in the heap
      const Candidate candidate{key, index_of(c)};
      if (has_threshold_ && !before(candidate, threshold_)) continue;
      buffer_.push_back(candidate);
      if (static_cast<int64_t>(buffer_.size()) == capacity_) compact();
    }
  }

  int64_t finish(float* keys, int64_t* indices) {
    if (static_cast<int64_t>(buffer_.size()) > k_) compact();
    std::sort(buffer_.begin(), buffer_.end(), before);
    for (size_t j = 0; j < buffer_.size(); ++j) {
      keys[j] = buffer_[j].key;
      indices[j] = buffer_[j].index;
    }
    return static_cast<int64_t>(buffer_.size());
  }

 private:
  void compact() {
    std::nth_element(buffer_.begin(), buffer_.begin() + (k_ - 1), buffer_.end(), before);
    buffer_.resize(static_cast<size_t>(k_));
    threshold_ = buffer_.back();  // nth_element put the k-th best at position k-1
    has_threshold_ = true;
  }

  int64_t k_;
  int64_t capacity_;
  std::vector<Candidate> buffer_;
  Candidate threshold_{0.f, 0};
  bool has_threshold_ = false;
};

}  // namespace gknn::detail::cpu
