// neighbours.hpp: the k best (distance, index) pairs of one query, in the library's total order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace gknn::detail::join {

/// One candidate: exact float64 squared distance and base index. Lexicographic order = the total order.
using Candidate = std::pair<double, int64_t>;

/// Keeps the k smallest candidates as a max-heap (the worst on top), so an insert costs O(log k).
class BoundedNeighbours {
 public:
  explicit BoundedNeighbours(int64_t k) : k_(static_cast<size_t>(k)) { heap_.reserve(k_); }

  void clear() { heap_.clear(); }
  bool full() const { return heap_.size() == k_; }
  size_t size() const { return heap_.size(); }
  /// Squared distance of the current k-th candidate (+inf until k are held).
  double worst() const { return full() ? heap_.front().first : std::numeric_limits<double>::infinity(); }

  void offer(double distance, int64_t index) {
    const Candidate c{distance, index};
    if (!full()) {
      heap_.push_back(c);
      std::push_heap(heap_.begin(), heap_.end());
    } else if (c < heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.back() = c;
      std::push_heap(heap_.begin(), heap_.end());
    }
  }

  /// The held candidates in ascending order (empties the set).
  std::vector<Candidate>& sorted() {
    std::sort_heap(heap_.begin(), heap_.end());
    return heap_;
  }

 private:
  size_t k_;
  std::vector<Candidate> heap_;
};

}  // namespace gknn::detail::join
