// cpu_baseline.hpp: the CPU heap column of gknn_tang_bench, in a host-only file (gknn::select_k on a host copy).
#pragma once

#include <cstdint>
#include <vector>

namespace gknn::bench {

/// Median milliseconds of `reps` runs of gknn::select_k (Backend::Cpu, SelectAlgorithm::Heap, all host threads)
/// over the q x n row-major `keys`; the last result goes to out_keys / out_labels (q x k).
double time_cpu_heap(const float* keys, int64_t q, int64_t n, int64_t k, int reps, std::vector<float>* out_keys,
                     std::vector<int64_t>* out_labels);

}  // namespace gknn::bench
