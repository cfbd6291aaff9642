// hd.hpp: lets small helpers compile for both host and device.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GKNN_HD __host__ __device__ __forceinline__
#else
#define GKNN_HD inline
#endif

namespace gknn::detail {

/// A float's bits and back, on the host (memcpy) and the device (intrinsics).
GKNN_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

GKNN_HD float float_of_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

}  // namespace gknn::detail
