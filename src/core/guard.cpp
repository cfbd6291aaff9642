// guard.cpp: see guard.hpp.
#include "core/guard.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "core/finalize.hpp"
#include "core/host_parallel.hpp"
#include "cpu/distance/exact.hpp"
#include "cpu/parallel.hpp"
#include "gknn/error.hpp"
#include "gknn/search.hpp"

namespace gknn::detail {
namespace {

constexpr double kExactLimit = 16777216.0;  // 2^24: float32 holds every integer up to it
constexpr float kHalfMaxInteger = 2048.f;   // fp16 (11 significant bits) and TF32 hold every integer up to it
constexpr int64_t kMaxRetryEntries = int64_t(1) << 25;  // candidates of one retry pass (400 MB of keys and ids)

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

/// The largest |value| that round_to_tf32 (cuda/distance/cublas/tf32_split.hpp) rounds to nearest: only values within
/// half a TF32 unit of FLT_MAX are truncated (error up to 2^-10 instead of 2^-11).
constexpr float kTf32NearestBelow = 3.0e38f;

/// The error model of a path's keys (rerank.hpp): float32 inputs are exact (e = 0); the folded norm columns and the
/// finaliser's additions count as three more terms; split TF32 sums three products per component. The tf32 path
/// rounds its operands to nearest TF32 itself (10 explicit bits: e = 2^-11, half of the truncation's 2^-10, which
/// halves the bound and the candidates it admits: 922 of 10k SIFT-shaped queries retried with 2^-10), except near
/// FLT_MAX.
KeyErrorBound bound_of(catalogue::KeyPrecision precision, int64_t dim, const ValueStats& facts) {
  const bool nearest = facts.known && facts.max_abs < kTf32NearestBelow;
  switch (precision) {
    case catalogue::tf32: return rounded_inputs_bound(nearest ? 11 : 10, dim + 3);
    case catalogue::tf32x3: return KeyErrorBound{std::ldexp(1.0, -21), 3 * dim + 3};
    // Exact integer keys rounded once to float32: no input error, no float32 sum (rerank.hpp's bound with no terms
    // is 2u (|q| + |x|)^2, four times the one rounding's 2^-24 |key| for |key| <= (|q| + |x|)^2).
    case catalogue::integer_keys: return KeyErrorBound{0.0, 0, kExactLimit};
    default: return KeyErrorBound{0.0, dim + 3};
  }
}

/// Why a path's keys need no re-ranking on these data, or "" when they do.
std::string exact_without_guard(catalogue::KeyPrecision precision, const std::string& name, const ValueStats& facts,
                                int64_t dim) {
  switch (precision) {
    case catalogue::float64: return name + " keys are float64 sums";
    case catalogue::integer_only: return name + " runs only on integer data it is exact on";
    case catalogue::integer_keys:
      return integer_keys_exact(facts, dim) ? name + " keys are exact on these data (integer keys below 2^24)" : "";
    case catalogue::float32:
      return float32_exact(facts, dim) ? name + " keys are exact on these data (integers, sums below 2^24)" : "";
    case catalogue::tf32:
    case catalogue::tf32x3:
      return half_exact(facts, dim) ? name + " keys are exact on these data (integers up to 2048, sums below 2^24)"
                                    : "";
  }
  return "";
}

/// The parameters of a candidate pass: k' candidates, the resolved distance path (its bound is the one certified;
/// Auto could pick another at k') with the selection resolved beside it at k, and Auto selection where a forced or
/// resolved one does not serve k'.
SearchParams pass_params(const SearchParams& kp, int64_t kc, const GuardPath& resolved, Backend backend) {
  SearchParams pass = kp;
  pass.k = kc;
  pass.guard = Guard::Off;
  const catalogue::DistanceInfo* info = catalogue::find(resolved.distance);
  if (info && info->precision != catalogue::integer_only) {
    pass.distance = resolved.distance;
    if (pass.select == SelectAlgorithm::Auto) pass.select = resolved.select;
  }
  if (pass.select != SelectAlgorithm::Auto) {
    for (const SelectCapability& c : compiled_select_algorithms(backend))
      if (c.algorithm == pass.select && c.max_k < kc) pass.select = SelectAlgorithm::Auto;
  }
  return pass;
}

/// Rows `which` of `m`, contiguous in `storage`.
FloatView gather_rows(FloatView m, const std::vector<int64_t>& which, std::vector<float>& storage) {
  storage.resize(which.size() * static_cast<size_t>(m.cols));
  for (size_t i = 0; i < which.size(); ++i)
    std::copy(m.row(which[i]), m.row(which[i]) + m.cols, storage.begin() + static_cast<std::ptrdiff_t>(i * m.cols));
  return FloatView{storage.data(), static_cast<int64_t>(which.size()), m.cols, 0};
}

/// The rows of `m` in host memory: `m` itself, or (device memory) a copy in `storage`.
FloatView host_rows(FloatView m, std::vector<float>& storage) {
  if (m.memory == Memory::Host) return m;
  storage = cuda::download_rows(m);
  return FloatView{storage.data(), m.rows, m.cols, 0};
}

}  // namespace

namespace {

/// Integer values whose bound `factor` d M^2 (4 d M^2 with negative values; M = the largest |value|) stays below 2^24.
bool integer_bound_below_2_24(const ValueStats& f, int64_t dim, double nonnegative_factor) {
  if (!f.known || !f.integral) return false;
  const double m2 = static_cast<double>(f.max_abs) * f.max_abs, d = static_cast<double>(dim);
  return (f.nonnegative ? nonnegative_factor : 4.0) * d * m2 < kExactLimit;
}

}  // namespace

// A partial sum of a float32 key: up to 2 d M^2 for non-negative data (|x|^2 and -2 q.x have opposite signs).
bool float32_exact(const ValueStats& f, int64_t dim) { return integer_bound_below_2_24(f, dim, 2.0); }

// The key itself: |q - x|^2 <= d M^2 for non-negative data.
bool integer_keys_exact(const ValueStats& f, int64_t dim) { return integer_bound_below_2_24(f, dim, 1.0); }

bool half_exact(const ValueStats& f, int64_t dim) { return f.max_abs <= kHalfMaxInteger && float32_exact(f, dim); }

GuardDecision decide_guard(const SearchParams& kp, DistanceAlgorithm resolved, const ValueStats& facts, int64_t dim) {
  const catalogue::DistanceInfo* info = catalogue::find(resolved);
  const std::string name = to_string(resolved);
  if (kp.guard == Guard::Off) return {std::nullopt, "off (requested): " + name + " keys as they are"};
  if (kp.metric != Metric::SquaredL2 && kp.metric != Metric::InnerProduct)
    return {std::nullopt, "none: " + to_string(kp.metric) + " keys are not re-ranked (the guard covers squared L2, "
                          "L2, inner product and cosine)"};
  if (!info) return {std::nullopt, "none: no distance path"};
  const std::string exact = exact_without_guard(info->precision, name, facts, dim);
  if (kp.guard == Guard::Auto && !exact.empty()) return {std::nullopt, "not needed: " + exact};
  const char* kind = info->precision == catalogue::float32        ? " keys are float32 sums"
                     : info->precision == catalogue::integer_keys ? " keys are integers rounded to float32"
                                                                  : " keys are TF32 products";
  const std::string why = exact.empty() ? name + kind + " on float data" : "always (requested), although " + exact;
  return {bound_of(info->precision, dim, facts),
          "re-rank: " + why + "; the best k' candidates per query are re-ranked on float64 keys and certified within "
          "the path's error bound (queries without the proof are searched again with 4x the candidates)"};
}

GuardDecision guard_for(Backend backend, const SearchParams& kp, int64_t nq, int64_t nb, int64_t dim,
                        const ValueStats& facts, GuardPath* resolved) {
  const bool keyed = kp.metric == Metric::SquaredL2 || kp.metric == Metric::InnerProduct;
  if (kp.guard == Guard::Off || !keyed || (kp.guard == Guard::Auto && half_exact(facts, dim))) return {};
  SearchPlan plan;  // the very choice the search makes
  explain_on(backend, kp, nq, nb, dim, facts, plan);
  *resolved = GuardPath{plan.distance, plan.selects_itself ? SelectAlgorithm::Auto : plan.select};
  return decide_guard(kp, plan.distance, facts, dim);
}


namespace {

/// The certificate a pass asks of the backend's search (write_guarded, GuardRun).
DeviceCertificate certificate_for(const KeyErrorBound& bound, int64_t k, double max_row_norm) {
  DeviceCertificate c;
  c.k = k;
  c.input_error = bound.input_error;
  c.terms = bound.terms;
  c.exact_below = bound.exact_below;
  c.max_base_norm = max_row_norm;
  return c;
}

/// The queries whose certificate did not hold (flags per query of a pass, `query_of` their queries).
std::vector<int64_t> uncertified(const DeviceCertificate& c, const std::vector<int64_t>* query_of) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < c.certified.size(); ++i)
    if (!c.certified[i]) out.push_back(query_of ? (*query_of)[i] : static_cast<int64_t>(i));
  return out;
}

/// One guarded search: the result so far, and what its passes need only when a pass re-ranks on the host (the
/// queries in host memory, their bounds, the base's largest norm), made the first time one does.
class GuardRun {
 public:
  GuardRun(const GuardSource& source, FloatView queries, const SearchParams& kp, const KeyErrorBound& bound,
           HostArray<double>* exact_out)
      : source_(source), queries_(queries), kp_(kp), bound_(bound), threads_(cpu::resolve_threads(kp.threads)),
        exact_out_(exact_out) {
    result_.rows = queries.rows;
    result_.k = kp.k;
    if (exact_out_) fill_exact_out(queries.rows * kp.k);
  }

  /// A pass of `pass.k` candidates for `rows` (the queries query_of, in order): each certified query's top k goes
  /// into the result; the others are returned.
  std::vector<int64_t> pass(FloatView rows, const std::vector<int64_t>& query_of, const SearchParams& pass) {
    std::vector<int64_t> left;
    if (certified_where_base_is(rows, query_of, pass, left)) return left;
    const FloatView host = rows.memory == Memory::Host ? rows : host_queries();  // device rows: the first pass's
    const auto search_start = std::chrono::steady_clock::now();
    const KeyResult candidates = source_.candidates(host, pass);
    search_ms_ = elapsed_ms(search_start);
    return rerank_rows(candidates, query_of, source_.exact_keys(host, candidates), source_.rows, kp_.k, eps(),
                       result(), threads_, exact_out_ ? exact_out_->data() : nullptr);
  }

  /// The queries in host memory (a device view is downloaded once).
  FloatView host_queries() {
    if (queries_.memory == Memory::Host) return queries_;
    if (!host_view_) host_view_ = host_rows(queries_, host_queries_);
    return *host_view_;
  }
  int64_t device_rows() const { return device_rows_; }
  /// Wall time of the latest pass's search (the candidates, or on the device candidates and certificate).
  double search_ms() const { return search_ms_; }
  KeyResult take() { return std::move(result()); }

 private:
  /// The pass with its certificate taken in the backend's search (GuardSource::search_into), which also brings
  /// back the float64 keys when the caller wants them (exact_out); false when the backend cannot take it there.
  bool certified_where_base_is(FloatView rows, const std::vector<int64_t>& query_of, const SearchParams& pass,
                               std::vector<int64_t>& left) {
    if (!source_.search_into || pass.k > DeviceCertificate::kMaxCandidates) return false;
    const int64_t k = kp_.k;
    DeviceCertificate certificate = certificate_for(bound_, k, source_.max_row_norm);
    KeyResult part;
    OutputSpec out = key_output(part, rows.rows, k);
    out.certificate = &certificate;
    // With exact_out, the float64 keys and their rows come down too, over part's rows (part's are by index where
    // keys round to one float; the float keys at each place are the same either way): the first pass (every
    // query, in order) puts the keys straight into exact_out; a later one into `later`, copied per certified query.
    // The uncertified queries are searched again and written over then.
    const bool whole = rows.rows == result_.rows && result_.distances.empty();
    std::vector<double> later;
    if (exact_out_)
      certificate.exact_into = [&] {
        if (!whole) later.resize(part.indices.size());
        return DeviceCertificate::ExactInto{whole ? exact_out_->data() : later.data(), part.indices.data()};
      };
    const auto search_start = std::chrono::steady_clock::now();
    source_.search_into(rows, pass, out);
    search_ms_ = elapsed_ms(search_start);
    if (!certificate.ran) return false;
    device_rows_ += rows.rows;
    left = uncertified(certificate, &query_of);
    if (exact_out_ && !whole)
      for (int64_t i = 0; i < rows.rows; ++i)
        if (certificate.certified[size_t(i)])
          std::copy_n(later.begin() + i * k, k, exact_out_->begin() + query_of[size_t(i)] * k);
    // The first pass (query_of: every query in order) gives the result its storage; a later one copies its rows.
    if (whole) {
      result_ = std::move(part);
      return true;
    }
    for (int64_t i = 0; i < rows.rows; ++i) {
      if (!certificate.certified[size_t(i)]) continue;
      const int64_t query = query_of[size_t(i)];
      std::copy_n(part.distances.begin() + i * k, k, result().distances.begin() + query * k);
      std::copy_n(part.indices.begin() + i * k, k, result().indices.begin() + query * k);
    }
    return true;
  }

  /// The float64 keys' storage, +inf until a pass writes them: on the host pool, before the first pass reaches
  /// the device (a shard's 10k x 100 keys are 8 MB; filled on one thread, a millisecond on every shard's path).
  void fill_exact_out(int64_t n) {
    *exact_out_ = HostArray<double>::for_overwrite(static_cast<size_t>(n));
    double* keys = exact_out_->data();
    host_for(n, 1, int64_t(1) << 16, threads_,
             [keys](int64_t e) { keys[e] = std::numeric_limits<double>::infinity(); });
  }

  /// The result's storage, allocated by the first pass that writes rows into it.
  KeyResult& result() {
    if (result_.distances.empty()) result_ = allocate_result(result_.rows, result_.k);
    return result_;
  }

  /// eps_q of every query (the host re-rank's certificates).
  const std::vector<double>& eps() {
    if (!eps_.empty()) return eps_;
    if (source_.max_row_norm < 0) max_norm_ = source_.max_row_norm_of();
    else max_norm_ = source_.max_row_norm;
    const FloatView q = host_queries();
    eps_.resize(static_cast<size_t>(q.rows));
    host_for(q.rows, q.cols, int64_t(1) << 16, threads_, [&](int64_t i) {  // a short loop: host_parallel.hpp
      double s = 0;
      for (int64_t j = 0; j < q.cols; ++j) s += double(q.row(i)[j]) * q.row(i)[j];
      eps_[size_t(i)] = bound_.query_bound(std::sqrt(s), max_norm_);
    });
    return eps_;
  }

  const GuardSource& source_;
  FloatView queries_;
  const SearchParams& kp_;
  KeyErrorBound bound_;
  int threads_;
  KeyResult result_;
  HostArray<double>* exact_out_;
  std::vector<float> host_queries_;
  std::optional<FloatView> host_view_;
  std::vector<double> eps_;
  double max_norm_ = 0, search_ms_ = 0;
  int64_t device_rows_ = 0;
};

}  // namespace

KeyResult guarded_keys(const GuardSource& source, FloatView queries, const SearchParams& kp,
                       const GuardPath& resolved, const KeyErrorBound& bound, HostArray<double>* exact_out,
                       int64_t first) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t q = queries.rows, n = source.rows, k = kp.k;
  GuardRun run(source, queries, kp, bound, exact_out);
  std::vector<int64_t> pending(static_cast<size_t>(q));
  std::iota(pending.begin(), pending.end(), 0);
  std::vector<float> gathered;
  first = first > 0 ? std::min(first, n) : first_candidate_count(k, n, bound);
  pending = run.pass(queries, pending, pass_params(kp, first, resolved, source.backend));
  const double first_pass_ms = run.search_ms();
  int64_t retried = 0;
  // Later passes: 4x the candidates each time, in chunks of queries that bound the candidate lists' memory (rows tied
  // at the k-th distance may take every row: the certificate needs all of them).
  for (int64_t kc = std::min(n, first * 4); !pending.empty(); kc = std::min(n, kc * 4)) {
    SearchParams pass = pass_params(kp, kc, resolved, source.backend);
    pass.progress = nullptr, pass.stats = nullptr;
    retried += static_cast<int64_t>(pending.size());
    const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, kMaxRetryEntries / kc));
    std::vector<int64_t> still;
    for (size_t c0 = 0; c0 < pending.size(); c0 += chunk) {
      const std::vector<int64_t> part(pending.begin() + static_cast<std::ptrdiff_t>(c0),
                                      pending.begin() + static_cast<std::ptrdiff_t>(std::min(pending.size(), c0 + chunk)));
      const std::vector<int64_t> left = run.pass(gather_rows(run.host_queries(), part, gathered), part, pass);
      still.insert(still.end(), left.begin(), left.end());
    }
    pending = std::move(still);
    if (kc == n) GKNN_EXPECT(pending.empty(), ErrorCode::Internal, "exactness guard: uncertified with every row");
  }
  if (kp.stats) {
    kp.stats->guard_candidates = first;
    kp.stats->rerank_ms = elapsed_ms(start) - first_pass_ms;
    kp.stats->guard_retried = retried;
    kp.stats->guard_device_rows = run.device_rows();
  }
  return run.take();
}

GuardSource store_guard_source(const ResidentStore& store, Backend backend, const ValueStats& query_stats,
                               Metric key_metric, double p, int threads) {
  GuardSource source;
  source.backend = backend;
  source.rows = store.size();
  source.max_row_norm = store.max_row_norm();
  source.candidates = [&store, &query_stats](FloatView q, const SearchParams& pass) {
    return search_keys(store, q, pass, query_stats);
  };
  source.exact_keys = [&store, key_metric, p, threads](FloatView q, const KeyResult& c) {
    return store.exact_keys(q, c, key_metric, p, threads);
  };
  if (backend == Backend::Cuda)  // the certificate taken on the device, where the rows are resident
    source.search_into = [&store, &query_stats](FloatView q, const SearchParams& pass, const OutputSpec& out) {
      store.search_into(q, pass, query_stats, out);
    };
  return source;
}

void write_guarded(const GuardSource& source, FloatView queries, const SearchParams& kp, const GuardPath& resolved,
                   const KeyErrorBound& bound, const OutputSpec& out) {
  const int64_t q = queries.rows, n = source.rows, k = kp.k, first = first_candidate_count(k, n, bound);
  if (!source.search_into || first > DeviceCertificate::kMaxCandidates)
    return write_keys(guarded_keys(source, queries, kp, resolved, bound), out, kp.threads);
  // The destination is asked for once (a Result is allocated then): the retried rows are written into the same one.
  std::optional<ResultView> destination;
  OutputSpec direct = out;
  direct.destination = [&] {
    if (!destination) destination = out.destination();
    return *destination;
  };
  DeviceCertificate certificate = certificate_for(bound, k, source.max_row_norm);
  direct.certificate = &certificate;
  const auto start = std::chrono::steady_clock::now();
  source.search_into(queries, pass_params(kp, first, resolved, source.backend), direct);
  const double first_pass_ms = elapsed_ms(start);
  if (!certificate.ran) return write_keys(guarded_keys(source, queries, kp, resolved, bound), out, kp.threads);
  const std::vector<int64_t> pending = uncertified(certificate, nullptr);
  SearchStats later;
  if (!pending.empty()) {
    std::vector<float> host_copy, gathered;
    const FloatView host = host_rows(queries, host_copy);
    SearchParams again = kp;
    again.stats = &later, again.progress = nullptr;
    const KeyResult fixed = guarded_keys(source, gather_rows(host, pending, gathered), again, resolved, bound, nullptr,
                                         std::min(n, first * 4));
    write_rows(fixed, pending, direct, kp.threads);
  }
  if (kp.stats) {
    kp.stats->guard_candidates = first;
    kp.stats->rerank_ms = elapsed_ms(start) - first_pass_ms;
    kp.stats->guard_retried = static_cast<int64_t>(pending.size()) + later.guard_retried;
    kp.stats->guard_device_rows = q + later.guard_device_rows;
  }
}

std::vector<double> host_exact_keys(FloatView base, FloatView queries, const KeyResult& candidates, Metric key_metric,
                                    double p, int threads) {
  const int64_t kc = candidates.k;
  std::vector<double> exact(static_cast<size_t>(candidates.rows * kc), std::numeric_limits<double>::quiet_NaN());
  cpu::parallel_for(cpu::resolve_threads(threads), candidates.rows, [&](int64_t i) {
    std::vector<const float*> rows;
    std::vector<int64_t> at;
    for (int64_t j = 0; j < kc; ++j)
      if (const int64_t index = candidates.index(i, j); index >= 0) rows.push_back(base.row(index)), at.push_back(j);
    std::vector<double> keys(rows.size());
    cpu::exact_keys_of_rows(key_metric, p, queries.row(i), rows.data(), int64_t(rows.size()), base.cols, keys.data());
    for (size_t c = 0; c < at.size(); ++c) exact[size_t(i * kc + at[c])] = keys[c];
  });
  return exact;
}

double host_max_row_norm(FloatView rows, int threads) {
  double best = 0;
#pragma omp parallel for schedule(static) reduction(max : best) num_threads(cpu::resolve_threads(threads))
  for (int64_t i = 0; i < rows.rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < rows.cols; ++j) s += double(rows.row(i)[j]) * rows.row(i)[j];
    best = std::max(best, s);
  }
  return std::sqrt(best);
}

double max_norm_of_squares(const float* squared_norms, int64_t count, int64_t dim) {
  float best = 0.f;
  for (int64_t i = 0; i < count; ++i) best = std::max(best, squared_norms[i]);
  const double du = double(dim) * std::ldexp(1.0, -23);
  return std::sqrt(double(best) * (1.0 + 2.0 * du / (1.0 - du)));  // a float32 sum of d squares: within gamma_d
}

}  // namespace gknn::detail
