// convert.hpp: element conversions of the npy and HDF5 readers. A value that the target type cannot hold
// exactly (an integer above float32's 24-bit mantissa, a finite float64 beyond the float32 range, a
// fractional index) is a Format error naming the file, row and column, never a silent rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "gknn/error.hpp"

namespace gknn::detail::io {

/// Row and column of flat element `i` of a matrix with `cols` columns, for messages.
struct Place {
  const std::string& path;
  int64_t cols;
  int64_t first_row = 0;  ///< file row of element 0 (a reader of a row range)
};

template <class V>
[[noreturn]] void fail_value(const Place& place, size_t i, V value, const char* problem) {
  auto cols = static_cast<size_t>(place.cols > 0 ? place.cols : 1);
  detail::fail(ErrorCode::Format, "'", place.path, "': value ", +value, " at row ",
               i / cols + static_cast<size_t>(place.first_row), ", column ", i % cols, " ", problem);
}

template <class Src>
float exact_float(Src v, const Place& place, size_t i) {
  if constexpr (std::is_same_v<Src, float>) {
    return v;
  } else if constexpr (std::is_floating_point_v<Src>) {
    float f = static_cast<float>(v);
    if (std::isinf(f) && std::isfinite(v)) fail_value(place, i, v, "is outside the float32 range");
    return f;
  } else {
    float f = static_cast<float>(v);
    // 2^63 is the first float that no int64 holds; casting it back would be undefined.
    if (f >= 9223372036854775808.0f || static_cast<int64_t>(f) != static_cast<int64_t>(v))
      fail_value(place, i, v, "cannot be represented exactly as float32");
    return f;
  }
}

template <class Src>
int64_t exact_int64(Src v, const Place& place, size_t i) {
  if constexpr (std::is_floating_point_v<Src>) {
    if (!(std::trunc(v) == v && v >= -9223372036854775808.0 && v < 9223372036854775808.0))
      fail_value(place, i, v, "is not an integer that int64 can hold");
    return static_cast<int64_t>(v);
  } else {
    static_assert(sizeof(Src) < 8 || std::is_signed_v<Src>, "every unsigned source must fit int64");
    return static_cast<int64_t>(v);
  }
}

/// Converts n little-endian Src values starting at `bytes` (any alignment) into dst.
template <class Src>
void convert_to_float(const unsigned char* bytes, size_t n, float* dst, const Place& place) {
  if constexpr (std::is_same_v<Src, float>) {
    if (n > 0) std::memcpy(dst, bytes, n * sizeof(float));
  } else {
    for (size_t i = 0; i < n; ++i) {
      Src v;
      std::memcpy(&v, bytes + i * sizeof(Src), sizeof(Src));
      dst[i] = exact_float(v, place, i);
    }
  }
}

template <class Src>
void convert_to_int64(const unsigned char* bytes, size_t n, int64_t* dst, const Place& place) {
  for (size_t i = 0; i < n; ++i) {
    Src v;
    std::memcpy(&v, bytes + i * sizeof(Src), sizeof(Src));
    dst[i] = exact_int64(v, place, i);
  }
}

}  // namespace gknn::detail::io
