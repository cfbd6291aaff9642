// host_copy.cpp: see host_copy.hpp (plain C++ with OpenMP, compiled by the host compiler).
#include "cuda/pipeline/host_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <omp.h>

namespace gknn::detail::cuda {

void parallel_memcpy(void* dst, const void* src, size_t bytes, int max_threads) {
  constexpr size_t kMinChunk = size_t(1) << 20;
  const int threads = static_cast<int>(std::clamp<size_t>(bytes / kMinChunk, 1, std::max(1, max_threads)));
  if (threads == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t chunk = (bytes + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const size_t begin = std::min(bytes, static_cast<size_t>(t) * chunk), end = std::min(bytes, begin + chunk);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

}  // namespace gknn::detail::cuda
