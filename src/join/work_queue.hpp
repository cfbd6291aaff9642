// work_queue.hpp: the seed's work queue (its section 4.5 and Table 3). The points are ordered by the population of
// their grid cell, densest first; the GPU takes batches from the dense end, the CPU workers from the sparse end.
//   * GPU monolithic rounds: n_large * N points, then min(half the last round, unassigned - n_Cwin * N) while that
//     is positive (the CPU window keeps n_Cwin * N points for the CPU); then small batches of n_small * N.
//   * CPU batches of n_cpu * N; GPU small and CPU batches halve once 95% of the points are done.
//   * A GPU query that fails goes back to the queue: the CPU takes failed queries first; the GPU takes them again
//     only when the ordered points are all assigned (after its epsilon grew).
//   * GPU-only: every unfinished point in each batch (the seed's n_large = 1, n_Cwin = 0). Made with a count alone,
//     the queue lists no ids: the first batch is every query (take_gpu_all), later ones the failed queries.
// One mutex guards everything; a CPU worker that finds the queue empty while a GPU batch is in flight waits for
// that batch's failures.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gknn::detail::join {

struct QueueParams {
  double n_large = 0.4;
  double n_small = 0.005;
  double n_cpu = 0.005;
  double cpu_window = 0.4;
  bool gpu_takes_all = false;  ///< GPU-only mode
};

class WorkQueue {
 public:
  /// `order`: the query ids, densest cell first.
  WorkQueue(std::vector<int64_t> order, const QueueParams& params);
  /// GPU-only (params.gpu_takes_all): the query ids 0 .. total - 1, not listed (a list of 10^7 ids in identity
  /// order cost 76 ms on the H100 host beside the result's page population, and the GPU reorders them anyway).
  WorkQueue(int64_t total, const QueueParams& params);

  /// True once for a queue made with a count, false otherwise: the GPU's first batch, every query id 0 .. total - 1
  /// (in any order the GPU side likes). Marks a GPU batch in flight, like take_gpu.
  bool take_gpu_all();
  /// The next GPU batch (empty: nothing left for the GPU). Marks a GPU batch in flight. On a queue made with a
  /// count whose take_gpu_all was never called, the first batch lists every id.
  std::vector<int64_t> take_gpu();
  /// The GPU batch came back: `failed` go back to the queue, `answered` are done.
  void gpu_returned(const std::vector<int64_t>& failed, int64_t answered);
  /// The next CPU batch; waits while only an in-flight GPU batch could produce more work. Empty: all done.
  std::vector<int64_t> take_cpu();
  void cpu_returned(int64_t answered);

  int64_t done() const;
  int64_t total() const { return total_; }

 private:
  int64_t batch(double fraction) const;  ///< fraction * N, halved after 95% done, at least 1 (lock held)
  bool ordered_left() const { return head_ < tail_; }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int64_t> order_;
  std::vector<int64_t> retry_;
  QueueParams params_;
  int64_t total_ = 0;
  int64_t head_ = 0;  ///< next GPU point of order_
  int64_t tail_ = 0;  ///< order_[tail_ - 1] is the next CPU point
  int64_t done_ = 0;
  double last_large_ = -1;  ///< size of the last monolithic round; 0 once they are over
  bool gpu_in_flight_ = false;
  bool all_pending_ = false;  ///< made with a count: the batch of every id is still to be taken
};

}  // namespace gknn::detail::join
