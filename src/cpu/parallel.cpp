#include "cpu/parallel.hpp"

#include <omp.h>

#include "core/host_parallel.hpp"

namespace gknn::detail::cpu {

int resolve_threads(int requested) { return requested > 0 ? requested : host_team(); }

void Progress::unit_done() {
  const int64_t done = done_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (callback_ && omp_get_thread_num() == 0 && done < total_)
    callback_(static_cast<double>(done) / static_cast<double>(total_));
}

void Progress::finish() const {
  if (callback_) callback_(1.0);
}

}  // namespace gknn::detail::cpu
