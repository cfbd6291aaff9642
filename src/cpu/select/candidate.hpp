// candidate.hpp: a (key, index) pair and the library's total order on it, as every CPU selector uses it.
#pragma once

#include <cstdint>

#include "core/order.hpp"

namespace gknn::detail::cpu {

struct Candidate {
  float key;
  int64_t index;  ///< base row, or the caller's label in select_k
};

/// Strict total order of candidates: smaller key first, equal keys by smaller index (core/order.hpp).
inline bool before(const Candidate& a, const Candidate& b) { return ranks_before(a.key, a.index, b.key, b.index); }

/// Index of column c of a scanned run: consecutive base rows starting at `first`.
struct ConsecutiveIndex {
  int64_t first;
  int64_t operator()(int64_t c) const { return first + c; }
};

/// Index of column c of a select_k row: the caller's label.
struct LabelIndex {
  const int64_t* labels;
  int64_t operator()(int64_t c) const { return labels[c]; }
};

}  // namespace gknn::detail::cpu
