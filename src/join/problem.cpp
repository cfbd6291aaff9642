#include "join/problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/finalize.hpp"
#include "core/host_parallel.hpp"
#include "cpu/distance/exact.hpp"

namespace gknn::detail::join {

double squared_distance(const float* a, const float* b, int64_t dim) {
  return cpu::exact_key(Metric::SquaredL2, 2.0, a, b, dim);
}

Result without_self(const Result& all, int64_t k) {
  // Not zero-filled: each row's k entries are all written below.
  Result out = allocate_result(all.rows, k);
#pragma omp parallel for schedule(static) if (all.rows >= 4096)
  for (int64_t i = 0; i < all.rows; ++i) {
    int64_t written = 0;
    for (int64_t j = 0; j < all.k && written < k; ++j) {
      if (all.index(i, j) == i) continue;
      out.indices[size_t(i * k + written)] = all.index(i, j);
      out.distances[size_t(i * k + written)] = all.distance(i, j);
      ++written;
    }
    for (; written < k; ++written) {  // only if `all` held fewer than k + 1 entries: padded as a search pads
      out.indices[size_t(i * k + written)] = -1;
      out.distances[size_t(i * k + written)] = std::numeric_limits<float>::infinity();
    }
  }
  return out;
}

void Output::write_row(const Problem& problem, int64_t row, const std::vector<Candidate>& sorted) const {
  wait_ready();  // an atomic load once the result exists (a promise's state: no thread join behind it)
  const int64_t k = problem.k;
  float* distances = result->distances.data() + row * k;
  int64_t* indices = result->indices.data() + row * k;
  const int64_t held = std::min<int64_t>(k, static_cast<int64_t>(sorted.size()));
  for (int64_t j = 0; j < held; ++j) {
    const double d = sorted[size_t(j)].first;
    distances[j] = static_cast<float>(problem.metric == Metric::L2 ? std::sqrt(d) : d);
    indices[j] = sorted[size_t(j)].second;
  }
  for (int64_t j = held; j < k; ++j) {
    distances[j] = std::numeric_limits<float>::infinity();
    indices[j] = -1;
  }
}

namespace {

/// Slot s of `distances`/`indices` (k each; 32-bit base ids, widened) into result row row_of(s) where ok[s], on the
/// host pool; the rows of the others appended to `failed`, in slot order. Parts of at least 2^16 entries (~0.8 MB of
/// rows: a 2^18-query chunk at k = 16 takes the whole team), each a stretch of consecutive slots. On the host pool,
/// not an OpenMP team: the GPU thread calls this once per chunk (39 chunks for 10^7 queries) and waits on the device
/// in between, where a team would spin on every core (GOMP_SPINCOUNT) beside the result's page population.
template <class RowOf>
void write_slots(Result& result, int64_t k, int64_t count, const float* distances, const uint32_t* indices,
                 const unsigned char* ok, std::vector<int64_t>& failed, RowOf row_of) {
  float* out_d = result.distances.data();
  int64_t* out_i = result.indices.data();
  host_for(count, k, int64_t(1) << 16, 0, [&](int64_t s) {
    if (!ok[s]) return;  // its row is written by the batch that answers it (perhaps a CPU worker): not here
    const int64_t row = row_of(s);
    std::copy(distances + s * k, distances + (s + 1) * k, out_d + row * k);
    const uint32_t* from = indices + s * k;
    int64_t* to = out_i + row * k;
    for (int64_t j = 0; j < k; ++j) to[j] = from[j];
  });
  for (int64_t s = 0; s < count; ++s)
    if (!ok[s]) failed.push_back(row_of(s));
}

}  // namespace

void Output::scatter(int64_t k, const int64_t* ids, const uint32_t* cell_ids, int64_t count, const float* distances,
                     const uint32_t* indices, const unsigned char* ok, std::vector<int64_t>& failed) const {
  wait_ready();
  // The rows land all over the result (the queries ran in the grid's cell order), so each part also takes the page
  // faults of the result pages the population has not reached yet.
  write_slots(*result, k, count, distances, indices, ok, failed,
              [&](int64_t s) { return ids ? ids[s] : int64_t(cell_ids[s]); });
}

void Output::copy_rows(int64_t k, int64_t first, int64_t count, const float* distances, const uint32_t* indices,
                       const unsigned char* ok, std::vector<int64_t>& failed) const {
  wait_ready();
  // A part is a stretch of consecutive rows of the result, so its writes stream (no row's cache lines or page
  // shared with another thread's, but at the part's two ends).
  write_slots(*result, k, count, distances, indices, ok, failed, [first](int64_t s) { return first + s; });
}

}  // namespace gknn::detail::join
