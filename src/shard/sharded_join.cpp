// sharded_join.cpp: gknn::knn_join over shards (gknn/sharded_index.hpp). Each shard runs an R ⋈ S join on its
// own host thread; the partial lists are merged per point on the float64 distance recomputed from the rows, so
// the order is the single join's (which ranks on float64 distances, then rounds them to float).
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "core/validate.hpp"
#include "cpu/parallel.hpp"
#include "gknn/error.hpp"
#include "gknn/sharded_index.hpp"
#include "join/problem.hpp"
#include "shard/segments.hpp"
#include "shard/shard_threads.hpp"

namespace gknn {
namespace {

using detail::join::Candidate;

/// What shard s joined: `part` answers the query rows [query_begin, query_begin + part.rows) with base indices
/// local to the rows [base_begin, ...) the shard holds.
struct ShardPart {
  Result part;
  int64_t query_begin = 0, base_begin = 0;
  bool empty() const { return part.rows == 0; }
};

/// Progress of several concurrent joins as one fraction: the mean of the shards' own largest fractions, one report
/// at a time (a lock: two shards' stores and sums could otherwise cross, each summing the other's older fraction),
/// so that the user's fractions never decrease and the last is 1. ShardedJoin.ProgressReachesOne saw 0.94 last
/// under initcheck on the H100 (2026-11-27): a shard's 0.88 had arrived after its 1.0 and replaced it.
class SharedProgress {
 public:
  SharedProgress(ProgressCallback user, size_t shards) : user_(std::move(user)), done_(shards, 0.0) {}
  ProgressCallback for_shard(size_t s) {
    if (!user_) return {};
    return [this, s](double fraction) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_[s] = std::max(done_[s], fraction);
      double sum = 0;
      for (double f : done_) sum += f;
      user_(sum / double(done_.size()));
    };
  }

 private:
  ProgressCallback user_;
  std::mutex mutex_;
  std::vector<double> done_;
};

void add_shard_report(JoinReport& into, const JoinReport& r) {
  into.mode = r.mode;
  into.epsilon_ms = std::max(into.epsilon_ms, r.epsilon_ms);
  into.ordering_ms = std::max(into.ordering_ms, r.ordering_ms);
  into.index_ms = std::max(into.index_ms, r.index_ms);
  into.cpu_index_ms = std::max(into.cpu_index_ms, r.cpu_index_ms);
  into.gpu_ms = std::max(into.gpu_ms, r.gpu_ms);
  into.index_alloc_ms = std::max(into.index_alloc_ms, r.index_alloc_ms);  // the shards' GPU stages run side by side
  into.gpu_kernel_ms = std::max(into.gpu_kernel_ms, r.gpu_kernel_ms);
  into.gpu_setup_ms = std::max(into.gpu_setup_ms, r.gpu_setup_ms);
  into.gpu_wait_ms = std::max(into.gpu_wait_ms, r.gpu_wait_ms);
  into.gpu_scatter_ms = std::max(into.gpu_scatter_ms, r.gpu_scatter_ms);
  into.result_wait_ms = std::max(into.result_wait_ms, r.result_wait_ms);
  into.cpu_ms = std::max(into.cpu_ms, r.cpu_ms);
  into.load_imbalance = std::max(into.load_imbalance, r.load_imbalance);
  into.epsilon_min = std::max(into.epsilon_min, r.epsilon_min);
  into.epsilon_final = std::max(into.epsilon_final, r.epsilon_final);
  into.reindexings += r.reindexings;
  into.gpu_batches += r.gpu_batches;
  into.cpu_batches += r.cpu_batches;
  into.gpu_queries += r.gpu_queries;
  into.cpu_queries += r.cpu_queries;
  into.failed_queries += r.failed_queries;
  into.brute_force_queries += r.brute_force_queries;
}

std::string layout_note(const std::vector<ShardDevice>& shards, ShardMode mode) {
  return std::to_string(shards.size()) + " shards, " + (mode == ShardMode::Sharded ? "sharded: " : "replicated: ") +
         describe_shards(shards);
}

/// Shard s's join: sharded, every point against the shard's rows (k + 1 of them at most, so that k others remain
/// once the point itself is dropped); replicated, the shard's range of points against all of them.
ShardPart join_shard(FloatView points, int64_t k, ShardMode mode, int64_t s, int64_t shard_count,
                     const JoinParams& params) {
  const detail::PartRange range = detail::near_equal_part(points.rows, s, shard_count);
  ShardPart out;
  if (range.end == range.begin) return out;
  const FloatView rows{points.row(range.begin), range.end - range.begin, points.cols, points.row_stride()};
  if (mode == ShardMode::Sharded) {
    out.base_begin = range.begin;
    out.part = knn_join(points, rows, std::min(k + 1, rows.rows), params);
  } else {
    out.query_begin = range.begin;
    out.part = knn_join(rows, points, k + 1, params);
  }
  return out;
}

/// Row i of the join from the parts that answered it: every candidate but i itself, ranked on its exact float64
/// distance and its global index.
void merge_row(FloatView points, const std::vector<ShardPart>& parts, const detail::join::Problem& problem,
               const detail::join::Output& output, int64_t i, std::vector<Candidate>& candidates) {
  candidates.clear();
  for (const ShardPart& p : parts) {
    if (p.empty() || i < p.query_begin || i >= p.query_begin + p.part.rows) continue;
    const int64_t row = i - p.query_begin;
    for (int64_t j = 0; j < p.part.k; ++j) {
      const int64_t local = p.part.index(row, j);
      if (local < 0) continue;
      const int64_t global = p.base_begin + local;
      if (global == i) continue;
      candidates.push_back({detail::join::squared_distance(points.row(i), points.row(global), points.cols), global});
    }
  }
  const auto keep = candidates.begin() + std::min<ptrdiff_t>(problem.k, ptrdiff_t(candidates.size()));
  std::partial_sort(candidates.begin(), keep, candidates.end());
  output.write_row(problem, i, candidates);
}

}  // namespace

Result knn_join(FloatView points, int64_t k, const std::vector<ShardDevice>& shards, ShardMode mode,
                const JoinParams& params) {
  const auto start = std::chrono::steady_clock::now();
  detail::validate_matrix(points, "points", false);
  detail::join::validate_params(params);
  GKNN_EXPECT(!shards.empty(), ErrorCode::InvalidArgument, "knn_join: the list of shards is empty");
  GKNN_EXPECT(k > 0, ErrorCode::InvalidArgument, "knn_join: k must be positive (got ", k, ")");
  GKNN_EXPECT(k < points.rows, ErrorCode::InvalidArgument, "knn_join: k = ", k,
              " must be smaller than the number of points (", points.rows, "): each point has only ",
              points.rows - 1, " other points");
  std::vector<ShardDevice> where = shards;
  for (ShardDevice& d : where) d.backend = detail::resolve_backend(d.backend);
  JoinReport report;
  report.note = layout_note(where, mode);

  if (points.cols > kJoinMaxGridDim) {  // knn_join's brute force, on the shards
    ShardedIndex index(points.cols, where, mode, params.metric);
    index.add(points);
    SearchParams search;
    search.k = k + 1;
    search.metric = params.metric;
    search.threads = params.cpu_threads;
    search.progress = params.progress;
    Result out = detail::join::without_self(index.search(points, search), k);
    report.brute_force_queries = points.rows;
    report.note += "; dimension > " + std::to_string(kJoinMaxGridDim) + ": exact brute force";
    report.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (params.report) *params.report = report;
    return out;
  }

  const std::vector<std::vector<int>> groups = detail::device_groups(where);
  const int threads = std::max(1, detail::cpu::resolve_threads(params.cpu_threads) / int(groups.size()));
  SharedProgress progress(params.progress, where.size());
  std::vector<ShardPart> parts(where.size());
  std::vector<JoinReport> reports(where.size());
  detail::run_concurrently(int(groups.size()), [&](int g) {
    for (int s : groups[size_t(g)]) {
      JoinParams own = params;
      own.device = where[size_t(s)].device;
      if (where[size_t(s)].backend == Backend::Cpu && own.mode != JoinMode::RoundRobin) own.mode = JoinMode::Cpu;
      own.cpu_threads = threads;
      own.progress = progress.for_shard(size_t(s));
      own.report = &reports[size_t(s)];
      parts[size_t(s)] = join_shard(points, k, mode, s, int64_t(where.size()), own);
    }
  });
  for (const JoinReport& r : reports) add_shard_report(report, r);

  Result result;
  result.rows = points.rows;
  result.k = k;
  result.distances.resize(size_t(result.rows * k));
  result.indices.resize(size_t(result.rows * k));
  const detail::join::Problem problem{points, points, k, true, params.metric};
  const detail::join::Output output{&result, {}};  // allocated above: nothing to wait for
  detail::cpu::parallel_for(detail::cpu::resolve_threads(params.cpu_threads), (points.rows + 1023) / 1024,
                            [&](int64_t block) {
                              std::vector<Candidate> candidates;
                              const int64_t end = std::min(points.rows, (block + 1) * 1024);
                              for (int64_t i = block * 1024; i < end; ++i)
                                merge_row(points, parts, problem, output, i, candidates);
                            });
  report.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (params.report) *params.report = report;
  return result;
}

}  // namespace gknn
