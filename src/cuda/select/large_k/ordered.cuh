// ordered.cuh: order-preserving maps from float keys and int64 labels to unsigned integers.
//
// Radix digits, splitter comparisons and tie detection all work on these integers, so one integer compare
// is one total-order compare. -0.0 is mapped like +0.0 (the library's order makes them equal), and the map
// back returns +0.0 for both. NaN never reaches a selector, so UINT32_MAX is free to act as a sentinel.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace gknn::cuda_detail::large_k {

/// Larger than the image of every non-NaN float (+inf maps to 0xFF800000).
constexpr uint32_t kKeySentinel = 0xFFFFFFFFu;

/// Float bits -> unsigned integer with the same order: negatives flip every bit (larger magnitude means
/// smaller), non-negatives flip only the sign bit (so they sort above every negative).
GKNN_HD uint32_t ordered_from_bits(uint32_t bits) {
  if (bits == 0x80000000u) bits = 0u;  // -0.0 -> +0.0
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

GKNN_HD uint32_t bits_from_ordered(uint32_t ordered) {
  return (ordered & 0x80000000u) ? (ordered & 0x7FFFFFFFu) : ~ordered;
}

#if defined(__CUDACC__)
__device__ __forceinline__ uint32_t ordered_key(float key) { return ordered_from_bits(__float_as_uint(key)); }
__device__ __forceinline__ float key_from_ordered(uint32_t ordered) {
  return __uint_as_float(bits_from_ordered(ordered));
}
#endif

/// int64 label -> uint64 with the same order (two's complement: flip the sign bit).
GKNN_HD uint64_t ordered_label(int64_t label) { return static_cast<uint64_t>(label) ^ (uint64_t{1} << 63); }

}  // namespace gknn::cuda_detail::large_k
