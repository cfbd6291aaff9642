// host_copy.hpp: host memory copies large enough to split over threads (result tiles out of pinned memory:
// the destination's pages are touched for the first time there, which one thread does at a fraction of the
// memory bandwidth).
#pragma once

#include <cstddef>

namespace gknn::detail::cuda {

/// memcpy of `bytes` bytes, split over up to `max_threads` OpenMP threads in chunks of at least 1 MiB.
void parallel_memcpy(void* dst, const void* src, size_t bytes, int max_threads = 16);

}  // namespace gknn::detail::cuda
