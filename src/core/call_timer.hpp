// call_timer.hpp: the wall time of one public search call, into SearchParams::stats (backends fill the phases).
#pragma once

#include <chrono>

#include "gknn/types.hpp"

namespace gknn::detail {

class CallTimer {
 public:
  explicit CallTimer(SearchStats* stats) : stats_(stats), start_(std::chrono::steady_clock::now()) {
    if (stats_) *stats_ = SearchStats{};
  }
  ~CallTimer() {
    if (stats_)
      stats_->total_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  /// Records the time since the call began as the argument checks' time (SearchStats::check_ms).
  void checks_done() {
    if (stats_)
      stats_->check_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  SearchStats* stats_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gknn::detail
