// cpu_baseline.cpp: see cpu_baseline.hpp.
#include "cpu_baseline.hpp"

#include <algorithm>
#include <chrono>

#include "gknn/search.hpp"

namespace gknn::bench {

double time_cpu_heap(const float* keys, int64_t q, int64_t n, int64_t k, int reps, std::vector<float>* out_keys,
                     std::vector<int64_t>* out_labels) {
  SelectParams params;
  params.backend = Backend::Cpu;
  params.algorithm = SelectAlgorithm::Heap;
  const FloatView view{keys, q, n, 0};
  std::vector<double> times;
  Result res;
  for (int i = 0; i < std::max(1, reps); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    res = select_k(view, nullptr, k, Order::Ascending, params);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  *out_keys = std::move(res.distances);
  *out_labels = std::move(res.indices);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace gknn::bench
