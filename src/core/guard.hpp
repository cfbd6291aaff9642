// guard.hpp: the exactness guard (SearchParams::guard): when the distance path that a search runs is not proven
// exact on its data, the search takes k' > k candidates per query from that path, re-ranks them on float64 keys and
// certifies each query's top k (rerank.hpp); queries without the certificate are searched again with 4 times the
// candidates, up to every row. Backend-neutral: a GuardSource says where the candidates and the exact keys come
// from (host rows, a device view, an Index's store).
//
// When the keys are exact without it (the decision, decide_guard): float64 keys (the reference); paths that run only
// on integer data they are exact on (fp16_mma, fused); float32 paths on integer data whose sums stay below 2^24
// (float32_exact); integer-key paths (int8_mma) where every key is below 2^24 (integer_keys_exact); TF32 paths on
// the data fp16 holds exactly as well (half_exact). Only the squared L2 and inner product keys (L2, cosine) are
// guarded: L1, Linf and Lp keep their float32 keys.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/rerank.hpp"

namespace gknn::detail {

/// Float32 products and sums of these values are exact: integers with every partial sum of a key below 2^24 in
/// magnitude (2 d M^2 for non-negative data, 4 d M^2 otherwise; M = the largest |value|). Unknown facts: false.
bool float32_exact(const ValueStats& facts, int64_t dim);
/// Every squared L2 and inner-product key of these values is an integer below 2^24 (d M^2 for non-negative data,
/// 4 d M^2 otherwise), so float32 holds the keys of an integer_keys path exactly.
bool integer_keys_exact(const ValueStats& facts, int64_t dim);
/// float32_exact, and every value an integer fp16 and TF32 hold exactly (|v| <= 2048).
bool half_exact(const ValueStats& facts, int64_t dim);

/// What a guarded search's candidate passes run: the distance path and the selection the search resolves at its own
/// k. Its passes take k' > k candidates, and at k' Auto could choose otherwise than at k (another row of the plan
/// table, whose rows are measured at the user's k with the passes forced to the row's pair): the passes force both.
struct GuardPath {
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  SelectAlgorithm select = SelectAlgorithm::Auto;  ///< Auto: the backend chooses at k' (or the path selects itself)
};

/// Whether a search re-ranks its keys, with the error bound of its distance path, and why.
struct GuardDecision {
  std::optional<KeyErrorBound> bound;  ///< set: guarded
  std::string reason;
};
/// kp: key params (key metric); resolved: the distance algorithm the backend runs (not Auto); facts: the base's and
/// the queries' merged.
GuardDecision decide_guard(const SearchParams& kp, DistanceAlgorithm resolved, const ValueStats& facts, int64_t dim);

/// decide_guard for a search on `backend` of nq queries against nb rows: the distance path and selection it resolves
/// to go to *resolved. Data every path is exact on (half_exact) skip the planner's call: guard Auto needs none there.
GuardDecision guard_for(Backend backend, const SearchParams& kp, int64_t nq, int64_t nb, int64_t dim,
                        const ValueStats& facts, GuardPath* resolved);

/// Where a guarded search gets its candidates and exact keys.
struct GuardSource {
  Backend backend = Backend::Cpu;
  int64_t rows = 0;            ///< base rows
  /// Largest Euclidean norm of a base row; < 0: not known, max_row_norm_of() gives it when a host re-rank needs it
  /// (a certificate taken where the base lives computes it there).
  double max_row_norm = -1;
  std::function<double()> max_row_norm_of;
  /// Computed keys (key form, ascending, base indices) of the kp.k best rows of every row of `queries` (a host
  /// copy of the search's queries, or of some of them).
  std::function<KeyResult(FloatView queries, const SearchParams& kp)> candidates;
  /// exact[i * K' + j]: the float64 key of (row i of `queries`, candidates.index(i, j)); any value where it is -1.
  std::function<std::vector<double>(FloatView queries, const KeyResult& candidates)> exact_keys;
  /// Optional (the cuda backend): the backend's search of `queries` (host or device rows) through an OutputSpec, so
  /// that a pass takes its certificate where the base lives (OutputSpec::certificate); candidates and exact_keys
  /// serve the passes it cannot take.
  std::function<void(FloatView queries, const SearchParams& kp, const OutputSpec& out)> search_into;
};

/// The GuardSource of a store's rows (an Index's, a shard's): candidates from the store's own search, exact keys
/// from the rows where it keeps them, and on the cuda backend the certificate inside its search. The source refers
/// to `store` and `query_stats`, which must outlive it.
GuardSource store_guard_source(const ResidentStore& store, Backend backend, const ValueStats& query_stats,
                               Metric key_metric, double p, int threads);

/// The guarded search of `queries` (device queries are copied to the host once): the exact top k of every query
/// (key form, k = kp.k), certified.
/// kp.stats (when set) gets the first candidate pass's phases and the guard's figures. `exact_out`, when given, gets
/// the float64 key of every entry (queries x k, +inf padding): the result's float keys round them, so lists of
/// several searches (MPI ranks) merge in the one device's order only on these.
/// `first`: the first pass's K' (0: first_candidate_count).
KeyResult guarded_keys(const GuardSource& source, FloatView queries, const SearchParams& kp,
                       const GuardPath& resolved, const KeyErrorBound& bound,
                       HostArray<double>* exact_out = nullptr, int64_t first = 0);

/// The guarded search written through `out` in the user's form. With GuardSource::search_into the first pass
/// takes its certificate in the backend's search and writes every row there, finalised where the base is; the
/// queries without the certificate are searched again (guarded_keys on those rows, from 4x the candidates) and
/// their rows written over (write_rows). Otherwise guarded_keys, then write_keys. kp.stats as guarded_keys.
void write_guarded(const GuardSource& source, FloatView queries, const SearchParams& kp, const GuardPath& resolved,
                   const KeyErrorBound& bound, const OutputSpec& out);

/// Exact float64 keys of candidate rows of a host base (GuardSource::exact_keys), on `threads` threads.
std::vector<double> host_exact_keys(FloatView base, FloatView queries, const KeyResult& candidates, Metric key_metric,
                                    double p, int threads);
/// Largest Euclidean norm of the rows of a host matrix.
double host_max_row_norm(FloatView rows, int threads);
/// The same from squared norms already computed (float32 sums: rounded up by their error bound).
double max_norm_of_squares(const float* squared_norms, int64_t count, int64_t dim);

}  // namespace gknn::detail
