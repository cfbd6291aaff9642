// timing.cuh: how every GPU selection benchmark times a launch: warm-up runs, then the median of repeats, each
// bracketed by CUDA events on the benchmark's stream.
#pragma once

#include <algorithm>
#include <vector>

#include "cuda/common/buffer.cuh"

namespace gknn::bench {

inline double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct Timing {
  int warmup = 1;
  int reps = 5;
  double slow_ms = 0;  ///< > 0: a warm-up slower than this cuts the repeats to one
};

/// Median milliseconds of launch() on `stream`; *runs (optional) gets the number of timed repeats.
template <class Launch>
double time_ms(Launch&& launch, const detail::cuda::Stream& stream, const Timing& t, int* runs = nullptr) {
  detail::cuda::Event start, stop;
  auto once = [&] {
    start.record(stream.get());
    launch();
    stop.record(stream.get());
    stream.sync();
    return stop.since(start);
  };
  int reps = t.reps;
  for (int i = 0; i < t.warmup; ++i)
    if (const float ms = once(); t.slow_ms > 0 && ms > t.slow_ms) reps = 1;
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) times.push_back(once());
  if (runs) *runs = reps;
  return median(times);
}

}  // namespace gknn::bench
