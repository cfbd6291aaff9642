// join.cpp: the public knn_join entry points: validation, mode resolution, the d > 8 brute-force fallback.
#include "gknn/join.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/finalize.hpp"
#include "core/progress.hpp"
#include "core/validate.hpp"
#include "gknn/error.hpp"
#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "join/driver.hpp"
#include "join/grid_geometry.hpp"
#include "join/kdtree.hpp"
#include "join/trace.hpp"
#include "plan/join_plan.hpp"

namespace gknn {
namespace {

using detail::join::Output;
using detail::join::Problem;

}  // namespace

void detail::join::validate_params(const JoinParams& params) {
  GKNN_EXPECT(params.metric == Metric::SquaredL2 || params.metric == Metric::L2, ErrorCode::InvalidArgument,
              "knn_join: metric must be squared_l2 or l2 (got ", to_string(params.metric), ")");
  const int t = params.threads_per_query;
  GKNN_EXPECT(t >= 1 && t <= 32 && (t & (t - 1)) == 0, ErrorCode::InvalidArgument,
              "knn_join: threads_per_query must be 1, 2, 4, 8, 16 or 32 (got ", t, ")");
  GKNN_EXPECT(params.rings >= -1 && params.rings <= 64, ErrorCode::InvalidArgument,
              "knn_join: rings must be in [0, 64] (0 = automatic) or -1 (the mode's default; got ", params.rings, ")");
  GKNN_EXPECT(params.epsilon >= 0 && std::isfinite(params.epsilon), ErrorCode::InvalidArgument,
              "knn_join: epsilon must be >= 0 and finite (0 = chosen by sampling; got ", params.epsilon, ")");
  const auto fraction = [](double v, const char* name) {
    GKNN_EXPECT(v >= 0 && v <= 1, ErrorCode::InvalidArgument, "knn_join: ", name, " must be a fraction in [0, 1] (got ",
                v, ")");
  };
  fraction(params.n_large, "n_large");
  fraction(params.n_small, "n_small");
  fraction(params.n_cpu, "n_cpu");
  fraction(params.cpu_window, "cpu_window");
  GKNN_EXPECT(params.cpu_threads >= 0 && params.cpu_threads <= detail::kMaxThreads, ErrorCode::InvalidArgument,
              "knn_join: cpu_threads must be in [0, ", detail::kMaxThreads, "] (got ", params.cpu_threads, ")");
}

namespace {

bool needs_kdtree(JoinMode mode) {
  return mode == JoinMode::Cpu || mode == JoinMode::Hybrid || mode == JoinMode::RoundRobin;
}

/// The mode that runs and its rings.
struct Choice {
  JoinMode mode = JoinMode::Auto;
  int rings = 1;
};

/// The CUDA device's name (for the plan's rows), read once per ordinal.
std::string device_name(int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::string> names;
  std::lock_guard<std::mutex> lock(mutex);
  if (!names.count(ordinal)) {
    names[ordinal] = "";
    for (const DeviceInfo& d : cuda_devices())
      if (d.ordinal == ordinal) names[ordinal] = d.name;
  }
  return names[ordinal];
}

/// Auto with a device: the measured plan's row for this device, n, d and k, else the rule: GPU only with growing
/// rings, the fastest mode on every set measured (the seed's UNIF/EXPO 2-6-D sets, 10^4-10^7 points, k 4-128; H200,
/// 2026-11-28: hybrid took 5-19 s at 10^7 where GPU only took 0.28-3.05 s). A row asking for the kd-tree in a build
/// without it gives way to the rule.
Choice plan_auto(const Problem& problem, const JoinParams& params, bool tree, JoinReport& report) {
  namespace plan = detail::plan;
  const plan::JoinTable& table = plan::active_join_table();
  const std::string device = device_name(params.device);
  const plan::JoinRow* row = plan::nearest_join(table, device, problem.queries.rows, problem.dim(), problem.k);
  const std::string no_tree = tree ? "" : std::string("; this build has no CPU kd-tree (") +
                                              detail::join::KdTree::kPackage + " was not found at configure time)";
  if (row && (tree || !needs_kdtree(row->mode))) {
    report.note = "mode auto: " + to_string(row->mode) + " with " +
                  (row->rings == 0 ? std::string("automatic rings") : std::to_string(row->rings) + " ring(s)") + ", " +
                  plan::describe_join(*row, table) + no_tree;
    return {row->mode, row->rings};
  }
  report.note = "mode auto: gpu with automatic rings (the rule: " +
                (row ? "the measured " + to_string(row->mode) + " needs the kd-tree"
                     : "no measured row for " + device + " at n=" + std::to_string(problem.queries.rows) +
                           ", d=" + std::to_string(problem.dim()) + ", k=" + std::to_string(problem.k)) +
                "; GPU only was the fastest mode wherever measured)" + no_tree;
  return {JoinMode::Gpu, 0};
}

/// The mode that runs. `tree_needed`: the CPU side would search a kd-tree (false for d > 8, which runs the brute
/// force, and for R ⋈ S with k > base rows, which scans a base smaller than k). A build without nanoflann has no
/// kd-tree: a mode that needs the tree is refused, not answered by an O(n) scan per query. The rings: the user's,
/// else the plan's for Auto, else the seed's one ring.
Choice resolve_mode(const Problem& problem, const JoinParams& params, bool tree_needed, JoinReport& report) {
  using detail::join::KdTree;
  const JoinMode mode = params.mode;
  const bool gpu = backend_available(Backend::Cuda);
  const bool tree = !tree_needed || KdTree::available();
  const auto refuse = [&](JoinMode m) {
    detail::fail(ErrorCode::Unsupported, "knn_join: mode ", to_string(m),
                 m == JoinMode::Auto ? " without a CUDA device" : "",
                 " needs the CPU kd-tree, and this build of gknn has none: ", KdTree::kPackage,
                 " was not found when it was configured (install it, or pass its prefix in CMAKE_PREFIX_PATH, and "
                 "rebuild)",
                 gpu ? "; mode gpu runs without it" : "");
  };
  const auto with_rings = [&](Choice c) {
    if (params.rings >= 0) c.rings = params.rings;
    return c;
  };
  if (mode == JoinMode::Auto) {
    if (!gpu && !tree) refuse(mode);
    if (!gpu) return with_rings({JoinMode::Cpu, 1});
    return with_rings(plan_auto(problem, params, tree, report));
  }
  GKNN_EXPECT(gpu || (mode != JoinMode::Hybrid && mode != JoinMode::Gpu), ErrorCode::Unsupported, "knn_join: mode ",
              to_string(mode), " needs a CUDA device, and none is available",
              KdTree::available() ? " (use mode cpu)" : "");
  if (needs_kdtree(mode) && !tree) refuse(mode);
  return with_rings({mode, 1});
}

/// d > 8: the exact brute force of gknn::search, k + 1 neighbours for a self-join with the point itself removed.
Result brute_force(const Problem& problem, const JoinParams& params, JoinReport& report) {
  const auto start = std::chrono::steady_clock::now();
  SearchParams search_params;
  search_params.k = problem.k + (problem.self ? 1 : 0);
  search_params.metric = params.metric;
  search_params.threads = params.cpu_threads;
  search_params.device = params.device;
  // A CPU mode stays on the CPU; the GPU modes (and Auto) let the search pick its backend.
  if (report.mode == JoinMode::Cpu || report.mode == JoinMode::RoundRobin) search_params.backend = Backend::Cpu;
  search_params.progress = params.progress;
  const Result all = search(problem.base, problem.queries, search_params);
  if (!problem.self) return all;
  Result out = detail::join::without_self(all, problem.k);
  report.brute_force_queries = all.rows;
  report.note = "dimension " + std::to_string(problem.dim()) + " > " + std::to_string(kJoinMaxGridDim) +
                ": exact brute force (gknn::search) instead of the grid";
  report.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Result run_join(const Problem& problem, const JoinParams& params) {
  const auto start = std::chrono::steady_clock::now();
  detail::join::validate_params(params);
  JoinReport local;
  JoinReport& report = params.report ? *params.report : local;
  report = JoinReport{};
  const bool small_base = !problem.self && problem.k > problem.base.rows;
  const Choice choice = resolve_mode(problem, params, problem.dim() <= kJoinMaxGridDim && !small_base, report);
  JoinMode mode = choice.mode;
  // What the driver and the searchers read: the mode and rings chosen.
  JoinParams chosen = params;
  chosen.rings = choice.rings;
  if (small_base) {
    // No query can hold k certain grid candidates: the CPU side answers (every base row is in every answer) and
    // pads like gknn::search.
    mode = JoinMode::Cpu;
    report.note = "k > base rows: CPU search of the whole base, rows padded with -1";
  }
  report.mode = mode;
  chosen.mode = mode;
  if (problem.dim() > kJoinMaxGridDim) return brute_force(problem, chosen, report);
  const int rings = detail::join::max_rings(chosen.rings, int(problem.dim()));  // refuses absurd ones in every mode
  // Left uninitialised (every row is written exactly once, padding included), its pages populated in parallel:
  // value-initialising a 10^7 x 16 result (1.9 GB) was a single-threaded pass over it before the join (0.7 s on
  // the 2-core development machine, 3.4 s there on memory touched for the first time). The allocation runs on a
  // thread of its own beside epsilon, the ordering and the first grid; the writers wait for it (Output::ready).
  // With a GPU side it starts once the base is on the device: beside the population the upload's pinned staging
  // took as long as the population itself (H100 host, 10^7 points, K = 32: 0.6-1.05 s instead of 0.03-0.15 s).
  // The writers wait only for the allocation, not for the population, which goes on beside them: a page that a
  // writer reaches first is faulted in by that writer (populate_result never changes a value). Waiting for all of
  // it put the whole population (212 ms for 10^7 x 16 on the H200 host, issue 14) before the GPU's first row.
  Result result;
  std::promise<void> allocated;
  const Output output{&result, allocated.get_future().share()};
  std::thread allocator;
  const auto start_allocation = [&] {
    if (allocator.joinable()) return;
    allocator = std::thread([&] {
      const auto allocation = std::chrono::steady_clock::now();
      try {
        result = detail::allocate_result(problem.queries.rows, problem.k);
        detail::join::trace_mark("result allocated");
      } catch (...) {
        allocated.set_exception(std::current_exception());
        return;
      }
      allocated.set_value();
      try {
        detail::populate_result(result);  // beside the writers (the arrays no longer move)
      } catch (...) {  // only a prefault: a writer faults in what it left
      }
      report.result_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - allocation).count();
      detail::join::trace_mark("result populated");
    });
  };
  struct JoinOnExit {
    std::thread& thread;
    ~JoinOnExit() {  // before `result` is destroyed, also when the join throws
      if (thread.joinable()) thread.join();
    }
  } join_allocator{allocator};
  if (mode != JoinMode::Gpu && mode != JoinMode::Hybrid) start_allocation();
  const auto make_searcher = [&] {
    auto searcher = detail::join::make_cuda_searcher(problem, output, params.device, params.threads_per_query, rings);
    start_allocation();
    return searcher;
  };
  detail::join::run_join(problem, output, mode, chosen, make_searcher, report);
  detail::join::trace_mark("driver returned (GPU side torn down)");
  start_allocation();  // a join that made no searcher (none needed) still returns an allocated result
  output.wait_ready();  // a join with nothing to write (no query rows) still returns an allocated result
  allocator.join();     // the population (it may outlast the writers) and its report.result_ms
  detail::join::trace_mark("allocator joined");
  report.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

/// The join with the user's progress callback kept going forward: the GPU driver and the CPU workers each report
/// the queue's count they read, and their calls can cross (a shard's 0.88 after its 1.0: ShardedJoin's mean
/// stopped at 0.94 under initcheck on the H100, 2026-11-27).
Result run(const Problem& problem, const JoinParams& params) {
  if (!params.progress) return run_join(problem, params);
  JoinParams forward = params;
  forward.progress = detail::monotonic_progress(params.progress);
  return run_join(problem, forward);
}

}  // namespace

Result knn_join(FloatView points, int64_t k, const JoinParams& params) {
  detail::join::trace_begin();
  detail::validate_matrix(points, "points", false);
  detail::join::trace_mark("points validated");
  GKNN_EXPECT(k > 0, ErrorCode::InvalidArgument, "knn_join: k must be positive (got ", k, ")");
  GKNN_EXPECT(k < points.rows, ErrorCode::InvalidArgument, "knn_join: k = ", k, " must be smaller than the number of points (",
              points.rows, "): each point has only ", points.rows - 1, " other points");
  return run(Problem{points, points, k, true, params.metric}, params);
}

Result knn_join(FloatView queries, FloatView base, int64_t k, const JoinParams& params) {
  detail::validate_matrix(base, "base", false);
  detail::validate_matrix(queries, "queries", true);
  GKNN_EXPECT(base.cols == queries.cols, ErrorCode::InvalidArgument, "knn_join: base dimension ", base.cols,
              " differs from query dimension ", queries.cols);
  GKNN_EXPECT(k > 0, ErrorCode::InvalidArgument, "knn_join: k must be positive (got ", k, ")");
  return run(Problem{base, queries, k, false, params.metric}, params);
}

std::string to_string(JoinMode mode) {
  switch (mode) {
    case JoinMode::Auto: return "auto";
    case JoinMode::Hybrid: return "hybrid";
    case JoinMode::Cpu: return "cpu";
    case JoinMode::Gpu: return "gpu";
    case JoinMode::RoundRobin: return "round_robin";
  }
  return "unknown";
}

JoinMode parse_join_mode(std::string_view name) {
  for (JoinMode m : {JoinMode::Auto, JoinMode::Hybrid, JoinMode::Cpu, JoinMode::Gpu, JoinMode::RoundRobin})
    if (name == to_string(m)) return m;
  if (name == "round-robin") return JoinMode::RoundRobin;
  detail::fail(ErrorCode::InvalidArgument, "unknown join mode '", name, "' (hybrid, cpu, gpu, round_robin or auto)");
}

}  // namespace gknn
