// ordered.cuh: order-preserving maps from float keys and int64 labels to unsigned integers.
//
// Radix digits, splitter comparisons and tie detection of sample/radix select (select/large_k/) and the composite
// keys of the row sort (row_sort.cuh) all work on these integers, so one integer compare is one total-order
// compare. -0.0 is mapped like +0.0 (the library's order makes them equal), and the map
// back returns +0.0 for both. NaN never reaches a selector, so UINT32_MAX is free to act as a sentinel.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace gknn::detail::cuda {

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

/// The same for float64 keys (the exactness guard's certificate, pipeline/certify.cu); UINT64_MAX is free as well.
/// One-to-one: -0.0 keeps its bits (and orders just before +0.0), because the keys it sorts are float64 keys of one
/// search, whose zeros all have one sign (+0.0 for squared L2, -0.0 for the negated inner product), and the
/// result must carry the host's sign of zero.
GKNN_HD uint64_t ordered_from_bits64(uint64_t bits) {
  constexpr uint64_t sign = uint64_t{1} << 63;
  return (bits & sign) ? ~bits : (bits | sign);
}

GKNN_HD uint64_t bits64_from_ordered(uint64_t ordered) {
  constexpr uint64_t sign = uint64_t{1} << 63;
  return (ordered & sign) ? (ordered & ~sign) : ~ordered;
}

#if defined(__CUDACC__)
__device__ __forceinline__ uint64_t ordered_key64(double key) {
  return ordered_from_bits64(static_cast<uint64_t>(__double_as_longlong(key)));
}
__device__ __forceinline__ double key64_from_ordered(uint64_t ordered) {
  return __longlong_as_double(static_cast<long long>(bits64_from_ordered(ordered)));
}
#endif

/// int64 label -> uint64 with the same order (two's complement: flip the sign bit).
GKNN_HD uint64_t ordered_label(int64_t label) { return static_cast<uint64_t>(label) ^ (uint64_t{1} << 63); }

// ---- composite sort keys of the row sort (row_sort.cu, labels that are columns) ---------------------------
//
// One 64-bit radix-sort key per (ordered key, column): the key sits directly above the column bits, so the
// meaningful bits are exactly [0, 32 + column_bits) and the sort may skip the always-zero top. (The key must
// not be placed at bit 32 while the sort stops below bit 64: it would then order by the key's low bits.)

/// Bits a column of a row of `cols` keys needs (0 for one column).
GKNN_HD int composite_column_bits(uint64_t cols) {
  int bits = 0;
  while (bits < 64 && (cols - 1) >> bits) ++bits;
  return bits;
}
/// End bit of the radix sort over composite keys: every higher bit is zero.
GKNN_HD int composite_end_bit(int column_bits) { return 32 + column_bits; }
GKNN_HD uint64_t composite_key(uint32_t ordered, uint32_t column, int column_bits) {
  return (uint64_t{ordered} << column_bits) | column;
}
GKNN_HD uint32_t composite_ordered(uint64_t composite, int column_bits) {
  return static_cast<uint32_t>(composite >> column_bits);
}
GKNN_HD uint32_t composite_column(uint64_t composite, int column_bits) {
  return static_cast<uint32_t>(composite & ((uint64_t{1} << column_bits) - 1));
}

}  // namespace gknn::detail::cuda
