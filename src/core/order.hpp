// order.hpp: the library's one total order on (key, index) pairs, shared by every backend and kernel.
//
// Backends select in ascending *key* order (see keys.hpp): smaller key first, equal keys by smaller index.
// -0.0 == +0.0 under IEEE comparison, so they tie and the index decides, as documented in types.hpp.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace gknn::detail {

/// True when (ka, ia) comes strictly before (kb, ib).
template <class Key, class Idx>
GKNN_HD bool ranks_before(Key ka, Idx ia, Key kb, Idx ib) {
  return ka < kb || (ka == kb && ia < ib);
}

}  // namespace gknn::detail
