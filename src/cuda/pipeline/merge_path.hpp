// merge_path.hpp: which element lands at position j of the merge of two sorted lists (host and device).
//
// Position j of the merge takes i elements from a and j - i from b, where i is the smallest value in
// [max(0, j - b_len), min(j, a_len)] for which "a[i] ranks before b[j-i-1]" is false: that predicate is true
// for every smaller i and false for every larger one (a ascends, and b's index descends as i grows), and at the
// upper end it is false by definition. The j-th element is then a[i] if a[i] exists and ranks before b[j-i]
// (or b is exhausted), else b[j-i]. Each position is found independently in O(log) steps, so one GPU thread
// per output needs no synchronisation. Lists must be strictly ordered by (key, label) with disjoint labels.
#pragma once

#include <cstdint>

#include "core/hd.hpp"
#include "core/order.hpp"

namespace gknn::detail::cuda {

struct MergePick {
  bool from_a;
  int64_t index;  ///< into a when from_a, else into b
};

/// Requires 0 <= j < a_len + b_len.
GKNN_HD MergePick merge_path_pick(const float* ak, const int64_t* al, int64_t a_len, const float* bk,
                                  const int64_t* bl, int64_t b_len, int64_t j) {
  int64_t lo = j > b_len ? j - b_len : 0, hi = j < a_len ? j : a_len;
  while (lo < hi) {
    const int64_t i = lo + (hi - lo) / 2;
    if (detail::ranks_before(ak[i], al[i], bk[j - i - 1], bl[j - i - 1])) lo = i + 1;
    else hi = i;
  }
  const int64_t jb = j - lo;
  const bool from_a = lo < a_len && (jb >= b_len || detail::ranks_before(ak[lo], al[lo], bk[jb], bl[jb]));
  return {from_a, from_a ? lo : jb};
}

}  // namespace gknn::detail::cuda
