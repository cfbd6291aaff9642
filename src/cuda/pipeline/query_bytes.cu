// query_bytes.cu: the byte form of a search's host queries (query_bytes.cuh).
#include "cuda/pipeline/query_bytes.cuh"

#include <algorithm>

#include "core/env_switch.hpp"
#include "cuda/common/error.cuh"

namespace gknn::detail::cuda {
namespace {

/// Four bytes a thread (one 32-bit load), grid-stride; the tail of count % 4 by the first threads.
__global__ void widen_bytes_kernel(const uint8_t* __restrict__ src, int64_t count, bool is_signed,
                                   float* __restrict__ dst) {
  const int64_t words = count / 4, step = int64_t(gridDim.x) * blockDim.x;
  const bool aligned = (reinterpret_cast<uintptr_t>(src) & 3) == 0;
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += step) {
    uint8_t b[4];
    if (aligned) {
      const uint32_t v = reinterpret_cast<const uint32_t*>(src)[w];
      for (int j = 0; j < 4; ++j) b[j] = static_cast<uint8_t>(v >> (8 * j));
    } else {
      for (int j = 0; j < 4; ++j) b[j] = src[4 * w + j];
    }
    for (int j = 0; j < 4; ++j)
      dst[4 * w + j] = is_signed ? static_cast<float>(static_cast<int8_t>(b[j])) : static_cast<float>(b[j]);
  }
  const int64_t tail = int64_t(blockIdx.x) * blockDim.x + threadIdx.x + words * 4;
  if (tail < count)
    dst[tail] = is_signed ? static_cast<float>(static_cast<int8_t>(src[tail])) : static_cast<float>(src[tail]);
}

bool query_bytes_enabled() {
  static const bool off = detail::env_switch_off("GKNN_QUERY_BYTES");
  return !off;
}

}  // namespace

std::optional<bool> query_byte_form(const DistanceEntry& distance, const DataFacts& facts) {
  const ValueStats& v = facts.values;
  if (!query_bytes_enabled() || !distance.exact_on || !distance.exact_on(facts)) return std::nullopt;
  if (!v.known || !v.integral) return std::nullopt;
  if (v.nonnegative && v.max_abs <= 255.f) return false;
  if (v.max_abs <= 127.f) return true;
  return std::nullopt;
}

void widen_bytes(const uint8_t* src, int64_t count, bool is_signed, float* dst, cudaStream_t s) {
  if (count <= 0) return;
  constexpr int kThreads = 256;
  const int64_t words = std::max<int64_t>(count / 4, 1);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((words + kThreads - 1) / kThreads, 4096));
  widen_bytes_kernel<<<blocks, kThreads, 0, s>>>(src, count, is_signed, dst);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda
