// progress.hpp: a progress callback that only goes forward.
#pragma once

#include <memory>
#include <mutex>
#include <utility>

#include "gknn/types.hpp"

namespace gknn::detail {

/// `user`, called one call at a time and with increasing fractions only. Workers that read a shared count and
/// then report it can reach the callback out of order (one reads 88%, another 100% and reports first); the
/// smaller, later fraction is dropped, so a progress bar never steps back and the last call is the largest.
/// Empty in, empty out.
inline ProgressCallback monotonic_progress(ProgressCallback user) {
  if (!user) return {};
  struct State {
    std::mutex mutex;
    double last = -1.0;
    ProgressCallback user;
  };
  auto state = std::make_shared<State>();
  state->user = std::move(user);
  return [state](double fraction) {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (fraction <= state->last) return;
    state->last = fraction;
    state->user(fraction);
  };
}

}  // namespace gknn::detail
