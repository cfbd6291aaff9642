// insert_bounded.hpp: one step of Garcia's modified insertion sort (host and device).
#pragma once

#include <cstdint>

#include "core/hd.hpp"
#include "core/order.hpp"

namespace gknn::detail::cuda {

/// The list holds `len` <= k entries sorted in the total order, entry i at keys[i * step] / labels[i * step].
/// Inserts (key, label) if the list is not full or the pair ranks before the last entry (which then drops out);
/// returns the new length. Shifts only the entries that rank after the new one.
GKNN_HD int64_t insert_bounded(float* keys, int64_t* labels, int64_t step, int64_t len, int64_t k, float key,
                               int64_t label) {
  int64_t pos;
  if (len < k) {
    pos = len++;
  } else {
    if (!detail::ranks_before(key, label, keys[(k - 1) * step], labels[(k - 1) * step])) return len;
    pos = k - 1;
  }
  while (pos > 0) {
    const float prev_key = keys[(pos - 1) * step];
    const int64_t prev_label = labels[(pos - 1) * step];
    if (!detail::ranks_before(key, label, prev_key, prev_label)) break;
    keys[pos * step] = prev_key;
    labels[pos * step] = prev_label;
    --pos;
  }
  keys[pos * step] = key;
  labels[pos * step] = label;
  return len;
}

}  // namespace gknn::detail::cuda
