// trace.hpp: GKNN_JOIN_TRACE=1 prints each phase of a join on stderr with its milliseconds since the call began
// (issue 14: the report's columns leave tens of ms of a 10^7-point join unnamed: validation, the bounding box,
// eps_mean's sample, the histogram passes, the searcher's teardown, the population's end).
#pragma once

#include <chrono>
#include <cstdio>

#include "core/env_switch.hpp"

namespace gknn::detail::join {

inline bool trace_on() {
  static const bool on = env_switch_on("GKNN_JOIN_TRACE");
  return on;
}

inline std::chrono::steady_clock::time_point& trace_origin() {
  static std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  return origin;
}

/// The start of a traced call (knn_join's first line); later marks count from it.
inline void trace_begin() {
  if (trace_on()) trace_origin() = std::chrono::steady_clock::now();
}

inline void trace_mark(const char* what) {
  if (!trace_on()) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - trace_origin()).count();
  std::fprintf(stderr, "[join %8.2f ms] %s\n", ms, what);
}

}  // namespace gknn::detail::join
