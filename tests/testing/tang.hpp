// tang.hpp: Tang et al.'s selection queues as the suites enumerate them: which algorithms are Tang queues, their
// flag combinations (aligned, buffered, hierarchical partition), and the two corners the sanitized runs keep for the
// costly calls.
#pragma once

#include <vector>

#include "gknn/types.hpp"

namespace gknn::testing {

inline bool is_tang(SelectAlgorithm a) {
  return a == SelectAlgorithm::InsertionQueue || a == SelectAlgorithm::HeapQueue || a == SelectAlgorithm::MergeQueue;
}

/// The options a selection is tested with: a Tang queue's 8 flag combinations (every flag off first), else the
/// default options alone.
inline std::vector<TangOptions> tang_variants(SelectAlgorithm a) {
  if (!is_tang(a)) return {TangOptions{}};
  std::vector<TangOptions> v;
  for (int bits = 0; bits < 8; ++bits) {
    TangOptions t;
    t.aligned = bits & 1;
    t.buffered = bits & 2;
    t.hierarchical = bits & 4;
    v.push_back(t);
  }
  return v;
}

/// Every flag off or every flag on.
inline bool tang_corner(const TangOptions& t) { return t.aligned == t.buffered && t.buffered == t.hierarchical; }

}  // namespace gknn::testing
