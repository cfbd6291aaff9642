// problem.hpp: one join as the internal pieces see it (base, queries, k, self-exclusion) and its output rows.
#pragma once

#include <cstdint>
#include <future>
#include <vector>

#include "gknn/join.hpp"
#include "gknn/types.hpp"
#include "join/neighbours.hpp"

namespace gknn::detail::join {

struct Problem {
  FloatView base;
  FloatView queries;  ///< the base itself for a self-join
  int64_t k = 0;
  bool self = false;  ///< exclude query i from its own list (by index: duplicates stay neighbours)
  Metric metric = Metric::SquaredL2;

  int64_t dim() const { return base.cols; }
  /// The index a query must not find (itself in a self-join), -1 otherwise.
  int64_t excluded(int64_t query) const { return self ? query : -1; }
};

/// The q x k result being filled; every row is written by exactly one thread.
struct Output {
  Result* result = nullptr;
  /// Valid while the result is being allocated on another thread (knn_join overlaps its allocation with epsilon,
  /// the ordering and the first grid): every write waits for it first, and rethrows a failed allocation.
  std::shared_future<void> ready;

  void wait_ready() const {
    if (ready.valid()) ready.get();
  }

  /// Writes a sorted candidate list (squared float64 distances) as row `row`: the metric's distance rounded to
  /// float, indices as they are, the tail past the list padded with -1 / +inf.
  void write_row(const Problem& problem, int64_t row, const std::vector<Candidate>& sorted) const;
  /// Rows computed elsewhere (the GPU): slot s of `distances`/`indices` (k each; base ids below 2^32, widened here)
  /// is query ids[s] (or cell_ids[s] where ids is null), written when ok[s]; the ids of the others are appended to
  /// `failed`, in order. Parallel over the rows, on the host pool.
  void scatter(int64_t k, const int64_t* ids, const uint32_t* cell_ids, int64_t count, const float* distances,
               const uint32_t* indices, const unsigned char* ok, std::vector<int64_t>& failed) const;
  /// Rows computed elsewhere in query order: slot s is query first + s, written when ok[s] (base ids widened); the
  /// ids of the others are appended to `failed`, ascending. Contiguous ranges of rows on the host pool: each thread
  /// writes (and faults in) its own stretch of the result, where scatter's rows land all over it.
  void copy_rows(int64_t k, int64_t first, int64_t count, const float* distances, const uint32_t* indices,
                 const unsigned char* ok, std::vector<int64_t>& failed) const;
};

/// Throws InvalidArgument naming the first JoinParams field out of its range (or an unsupported metric).
void validate_params(const JoinParams& params);

/// A self-join's rows from a search of k + 1 neighbours that did not exclude anything: row i without i itself
/// (when i is absent, its first k entries are all other points), k entries each.
Result without_self(const Result& all, int64_t k);

/// Exact float64 squared L2 distance, the same sum in the same order as the library's oracle (exact_key).
double squared_distance(const float* a, const float* b, int64_t dim);

}  // namespace gknn::detail::join
