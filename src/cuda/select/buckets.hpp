// buckets.hpp: THE k-bucket mechanism of the selection families (plain C++, shared with host-side tests).
//
// A register/shared-memory kernel is compiled for a fixed capacity K (its bucket) and serves every k <= K
// exactly (it keeps K slots and reads its threshold at position k-1). A family states its buckets once, as a
// BucketList in its tuning.hpp; with_bucket() picks the smallest bucket >= k at run time and calls the code
// compiled for it; src/cuda/select/buckets.cmake reads the same list to generate one translation unit per
// bucket from bucket.cu.in (a bucket missing there fails at link time, never silently).
#pragma once

#include <cstdint>
#include <type_traits>

#include "gknn/error.hpp"

namespace gknn::detail::cuda {

template <int... Ks>
struct BucketList {
  static constexpr int values[sizeof...(Ks)] = {Ks...};  ///< ascending
  static constexpr int count = sizeof...(Ks);
  static constexpr int largest = values[count - 1];

  /// Smallest bucket >= k; 0 when k exceeds the largest.
  static constexpr int smallest_at_least(int64_t k) {
    for (int b : values)
      if (k <= b) return b;
    return 0;
  }
};

/// Calls f(std::integral_constant<int, K>{}) for the smallest bucket K >= k of `list`; throws
/// Unsupported naming `family` when k exceeds the largest bucket.
template <int... Ks, class F>
void with_bucket(BucketList<Ks...> list, int64_t k, const char* family, F&& f) {
  const int bucket = list.smallest_at_least(k);
  GKNN_EXPECT(bucket != 0, ErrorCode::Unsupported, family, ": k = ", k, " exceeds the largest bucket ",
              list.largest);
  ((bucket == Ks ? (f(std::integral_constant<int, Ks>{}), true) : false) || ...);
}

}  // namespace gknn::detail::cuda
