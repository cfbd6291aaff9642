#include "join/driver.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <future>
#include <mutex>
#include <chrono>
#include <numeric>
#include <optional>
#include <parallel/algorithm>
#include <thread>
#include <tuple>
#include <vector>

#include "core/env_switch.hpp"
#include "core/host_parallel.hpp"
#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "gknn/search.hpp"
#include "join/epsilon.hpp"
#include "join/grid.hpp"
#include "join/kdtree.hpp"
#include "join/trace.hpp"
#include "join/work_queue.hpp"

namespace gknn::detail::join {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

/// Query ids by the population of their base cell, largest first; ties by cell then id, so that the points of one
/// cell stay together (the locality the seed credits for its queue's speed). A self-join reads the order off the
/// grid's cells; R ⋈ S sorts (population, cell, id) triples (an indirect compare over 10^7 ids took ~0.7 s).
std::vector<int64_t> order_by_population(const Problem& problem, const GridGeometry& geometry) {
  const HostGrid grid(problem.base, geometry);
  if (problem.self) return grid.ids_by_population();  // the queries are the base
  struct Entry {
    int64_t negative_population;
    uint64_t key;
    int64_t id;
    bool operator<(const Entry& o) const {
      return std::tie(negative_population, key, id) < std::tie(o.negative_population, o.key, o.id);
    }
  };
  const int64_t n = problem.queries.rows;
  std::vector<Entry> entries(static_cast<size_t>(n));
#pragma omp parallel for if (n >= 65536)
  for (int64_t i = 0; i < n; ++i)
    entries[size_t(i)] = {-grid.population(problem.queries.row(i)), cell_key(geometry, problem.queries.row(i)), i};
  // A total order (ties end at the id), so the parallel sort gives the one answer.
  __gnu_parallel::sort(entries.begin(), entries.end());
  std::vector<int64_t> order(static_cast<size_t>(n));
#pragma omp parallel for if (n >= 65536)
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = entries[size_t(i)].id;
  return order;
}

int resolve_threads(int requested, bool leave_one_for_gpu) {
  if (requested > 0) return requested;
  const int hardware = usable_cpus();  // within a container's CPU quota
  return leave_one_for_gpu ? std::max(1, hardware - 1) : hardware;
}

void report_progress(const JoinParams& params, int64_t done, int64_t total) {
  if (params.progress) params.progress(total == 0 ? 1.0 : double(done) / double(total));
}

/// The exact CPU search of a batch of queries on the kd-tree.
int64_t cpu_batch(const Problem& problem, const Output& output, const KdTree& tree, const std::vector<int64_t>& ids,
                  BoundedNeighbours& best) {
  for (int64_t q : ids) {
    best.clear();
    tree.search(problem.queries.row(q), problem.excluded(q), best);
    output.write_row(problem, q, best.sorted());
  }
  return static_cast<int64_t>(ids.size());
}

/// The side's growth per re-indexing of GPU-only mode beyond the seed: 2 up to 4-D; from 5-D the cells' volume 8
/// times larger (a side x 1.41 in 6-D), where a doubled side makes the next level's cells 64 times fuller and a
/// query that needed a little more than the last side scans up to 64 times the points it needs. Measured on the
/// H100 (10^7 points, K = 32, 2026-11-28, the ring budget at 800 cells): EXPO6D 6.96 s doubling, 5.77 s with x8
/// volumes, 6.44 with x16, 7.08 with x4; EXPO4D 1.06 doubling, 1.12 with x8. GKNN_JOIN_GROWTH_VOLUME=V takes V
/// for every dimension (read once), for such A/Bs.
double growth_factor(int dim) {
  static const double volume = env_positive("GKNN_JOIN_GROWTH_VOLUME", 0.0);
  if (volume > 1) return std::pow(volume, 1.0 / dim);
  return dim <= 4 ? 2.0 : std::pow(8.0, 1.0 / dim);
}

/// The seed's epsilon growth (eps += eps_min / 2 when over 25% of a batch failed); after 16 such steps it doubles
/// instead, so that a far outlier costs O(log) re-indexings in GPU-only mode rather than millions. In GPU-only mode
/// beyond the seed (queries that may grow rings, JoinParams::rings != 1) the next batch is exactly the failed
/// queries, which have already searched `rings` * side around them in vain (sparse regions: the tail of an
/// exponential set), so the next cells are rings / 2 (at least 2) times larger: a few re-indexings, not 19
/// (EXPO2D, 10^7 points, K = 32, on the H100).
/// Hybrid keeps the seed's growth: its later GPU batches still hold dense queries, which huge cells would slow.
double grown_epsilon(double eps, double eps_min, int64_t reindexings, int rings, int dim, bool gpu_only_growing) {
  if (gpu_only_growing) return eps * std::max(growth_factor(dim), rings / 2.0);
  return reindexings < 16 ? eps + 0.5 * eps_min : 2 * eps;
}

struct GpuSide {
  std::unique_ptr<GridSearcher> searcher;
  BoundingBox box;
  double eps = 0;
  double eps_min = 0;
};

/// GPU-only mode beyond the seed hands its last failed queries to the exact brute force instead of another, coarser
/// grid: when at most n / 1024 of them are left and they make at most 2^35 query-base pairs (3 436 queries at 10^7
/// points). There the grid had become the wrong tool: a sparse outlier's cells at a coarse side take in the dense
/// core, millions of points scanned by the 8 threads of one query, 121 queries on a GPU of 132 SMs (EXPO6D, 10^7
/// points, K = 32, H100, 2026-11-28: the last three levels, 5 149 queries, took 2.8 of 5.8 s).
bool brute_force_tail(const Problem& problem, int64_t failed) {
  return failed > 0 && failed <= problem.base.rows / 1024 && double(failed) * double(problem.base.rows) <= 0x1p35;
}

/// The exact rows of `ids` by gknn::search (k + 1 for a self-join, the query itself then dropped by index), each
/// list re-ranked in float64 (the join's exact distances, whatever precision the search computed in) before it is
/// written: the search's set is exact in the total order, so the re-ranked list is the join's.
void brute_force_rows(const Problem& problem, const Output& output, const JoinParams& params,
                      const std::vector<int64_t>& ids) {
  const int64_t dim = problem.dim(), rows = static_cast<int64_t>(ids.size());
  HostMatrix<float> queries(rows, dim);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(problem.queries.row(ids[size_t(r)]), dim, queries.row(r));
  SearchParams search_params;
  search_params.k = std::min(problem.k + (problem.self ? 1 : 0), problem.base.rows);
  search_params.metric = Metric::SquaredL2;
  search_params.device = params.device;
  const Result all = search(problem.base, queries.view(), search_params);
  std::vector<Candidate> list;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t q = ids[size_t(r)];
    list.clear();
    for (int64_t j = 0; j < all.k; ++j) {
      const int64_t i = all.index(r, j);
      if (i < 0 || i == problem.excluded(q)) continue;
      list.emplace_back(squared_distance(problem.queries.row(q), problem.base.row(i), dim), i);
    }
    std::sort(list.begin(), list.end());
    if (static_cast<int64_t>(list.size()) > problem.k) list.resize(size_t(problem.k));
    output.write_row(problem, q, list);
  }
}

void run_gpu(const Problem& problem, const Output& output, const JoinParams& params, GpuSide& gpu, WorkQueue& queue,
             JoinReport& report) {
  for (;;) {
    std::vector<int64_t> failed;
    int64_t batch = 0;
    if (queue.take_gpu_all()) {  // GPU-only's first batch: every query, unlisted
      batch = queue.total();
      failed = gpu.searcher->search_all();
    } else {
      const std::vector<int64_t> ids = queue.take_gpu();
      if (ids.empty()) return;
      batch = static_cast<int64_t>(ids.size());
      failed = gpu.searcher->search(ids);
    }
    const int64_t answered = batch - static_cast<int64_t>(failed.size());
    report.gpu_batches += 1;
    report.gpu_queries += answered;
    report.failed_queries += static_cast<int64_t>(failed.size());
    // GPU-only beyond the seed re-indexes after any failure: its next batch is exactly the failed queries, which
    // the same grid and rings would fail again (the seed's 25% rule re-ran them once in vain: 2.26 M queries of
    // EXPO6D at 10^7 points, K = 32, 1.16 of its 11.1 s on the H100, 2026-11-28).
    const bool growing = report.mode == JoinMode::Gpu && params.rings != 1;
    if (growing && brute_force_tail(problem, static_cast<int64_t>(failed.size()))) {
      brute_force_rows(problem, output, params, failed);
      report.brute_force_queries += static_cast<int64_t>(failed.size());
      queue.gpu_returned({}, static_cast<int64_t>(batch));
      trace_mark("GPU-only tail done by brute force");
      report_progress(params, queue.done(), queue.total());
      continue;
    }
    if (static_cast<int64_t>(failed.size()) * 4 > batch || (growing && !failed.empty())) {
      gpu.eps = grown_epsilon(gpu.eps, gpu.eps_min, report.reindexings, max_rings(params.rings, int(problem.dim())),
                              int(problem.dim()), growing);
      const GridGeometry geometry = make_geometry(gpu.box.lo, gpu.box.hi, int(problem.dim()), gpu.eps);
      gpu.searcher->build(geometry);
      report.epsilon_final = geometry.side;
      report.reindexings += 1;
    }
    queue.gpu_returned(failed, answered);
    if (trace_on()) {
      char what[160];
      std::snprintf(what, sizeof what, "GPU batch done: %lld queries, %lld failed, side %.4g, %lld re-indexings",
                    (long long)batch, (long long)failed.size(), gpu.eps, (long long)report.reindexings);
      trace_mark(what);
    }
    report_progress(params, queue.done(), queue.total());
  }
}

void run_round_robin(const Problem& problem, const Output& output, const KdTree& tree, int threads,
                     const JoinParams& params, JoinReport& report) {
  const int64_t n = problem.queries.rows;
  std::atomic<int64_t> done{0};
  std::vector<std::thread> workers;
  for (int p = 0; p < threads; ++p)
    workers.emplace_back([&, p] {
      BoundedNeighbours best(problem.k);
      std::vector<int64_t> mine;
      for (int64_t q = p; q < n; q += threads) mine.push_back(q);
      cpu_batch(problem, output, tree, mine, best);
      report_progress(params, done += static_cast<int64_t>(mine.size()), n);
    });
  for (std::thread& w : workers) w.join();
  report.cpu_queries = n;
  report.cpu_batches = threads;
}

}  // namespace

void run_join(const Problem& problem, const Output& output, JoinMode mode, const JoinParams& params,
              const SearcherFactory& make_searcher, JoinReport& report) {
  const auto start = Clock::now();
  report.mode = mode;
  const bool uses_gpu = mode == JoinMode::Hybrid || mode == JoinMode::Gpu;
  const bool uses_cpu = mode != JoinMode::Gpu;
  const int threads = resolve_threads(params.cpu_threads, mode == JoinMode::Hybrid);

  std::optional<KdTree> tree;
  if (mode == JoinMode::RoundRobin) {
    const auto index_start = Clock::now();
    tree.emplace(problem.base);
    report.cpu_index_ms = ms_since(index_start);
    const auto cpu_start = Clock::now();
    run_round_robin(problem, output, *tree, threads, params, report);
    report.cpu_ms = ms_since(cpu_start);
    report.total_ms = ms_since(start);
    return;
  }

  // Epsilon (sampling) and the order of the queue (cell populations of the first grid).
  auto phase = Clock::now();
  GpuSide gpu;
  // With a GPU side, the base goes up first, so that epsilon's histogram is counted on the device (500 sampled
  // points against every point, the seed's rule, in milliseconds) rather than on the host (a subset; 0.2-0.6 s for
  // 10^7 points beside the result's page population, H100 host, 2026-11-24).
  if (uses_gpu) {
    gpu.searcher = make_searcher();  // the base's upload (and the query rows' for R ⋈ S)
    report.upload_ms = ms_since(phase);
    trace_mark("searcher made (base uploaded)");
    phase = Clock::now();
  }
  gpu.box = bounding_box(problem.base);
  trace_mark("bounding box");
  if (params.epsilon > 0) {
    gpu.eps_min = params.epsilon;
  } else {
    if (gpu.searcher && gpu.searcher->counts_histograms()) {
      GridSearcher& searcher = *gpu.searcher;
      gpu.eps_min = select_epsilon(problem.base, problem.k, [&](const std::vector<int64_t>& rows, const Binning& b) {
                      return searcher.sample_histogram(rows, b);
                    }).eps_min;
    } else {
      gpu.eps_min = select_epsilon(problem.base, problem.k).eps_min;
    }
    // Beyond the seed: GPU-only queries that may grow (rings != 1) start from cells at which a point holds k
    // neighbours within one side not on average (the seed's eps_min, where about half the queries fail their 3^d
    // cells) but twice over on average, so that nearly all are certain at once and the rare others grow a ring
    // inside the kernel, instead of a whole warp waiting for its slowest query's 5^d cells.
    if (mode == JoinMode::Gpu && params.rings != 1) gpu.eps_min *= std::exp2(1.0 / double(problem.dim()));
  }
  gpu.eps = gpu.eps_min;
  report.epsilon_min = gpu.eps_min;
  report.epsilon_ms = ms_since(phase);
  trace_mark("epsilon chosen");
  phase = Clock::now();
  const GridGeometry geometry = make_geometry(gpu.box.lo, gpu.box.hi, int(problem.dim()), gpu.eps);
  report.epsilon_final = geometry.side;
  QueueParams queue_params{params.n_large, params.n_small, params.n_cpu, params.cpu_window, mode == JoinMode::Gpu};
  // GPU-only batches take every unfinished point, so their order would buy nothing: the queue lists no ids, and
  // the first batch is every query (GridSearcher::search_all; the CUDA grid takes them in its cell order).
  WorkQueue queue = mode == JoinMode::Gpu ? WorkQueue(problem.queries.rows, queue_params)
                                          : WorkQueue(order_by_population(problem, geometry), queue_params);
  report.ordering_ms = ms_since(phase);
  trace_mark("queue ordered");

  // The kd-tree is built beside the GPU's first grid and batches: the CPU workers start when it is ready.
  const auto work_start = Clock::now();
  std::shared_future<void> tree_ready;
  if (uses_cpu)
    tree_ready = std::async(std::launch::async, [&] {
                   tree.emplace(problem.base);
                   report.cpu_index_ms = ms_since(work_start);
                 }).share();
  double cpu_end_ms = 0, gpu_end_ms = 0;
  std::vector<std::thread> workers;
  std::mutex report_mutex;
  std::exception_ptr cpu_error;
  if (uses_cpu) {
    for (int p = 0; p < threads; ++p)
      workers.emplace_back([&] {
        int64_t answered = 0, batches = 0;
        try {
          tree_ready.get();
          BoundedNeighbours best(problem.k);
          for (std::vector<int64_t> ids = queue.take_cpu(); !ids.empty(); ids = queue.take_cpu()) {
            const int64_t n = cpu_batch(problem, output, *tree, ids, best);
            queue.cpu_returned(n);
            answered += n;
            batches += 1;
            report_progress(params, queue.done(), queue.total());
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(report_mutex);
          if (!cpu_error) cpu_error = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(report_mutex);
        report.cpu_queries += answered;
        report.cpu_batches += batches;
        cpu_end_ms = std::max(cpu_end_ms, ms_since(work_start));
      });
  }
  std::exception_ptr gpu_error;
  if (uses_gpu) {
    try {
      phase = Clock::now();
      gpu.searcher->build(geometry);  // made (the base uploaded) before epsilon, above
      report.index_ms = ms_since(phase);
      trace_mark("first grid built");
      run_gpu(problem, output, params, gpu, queue, report);
      trace_mark("GPU side done");
      const GpuStages stages = gpu.searcher->stages();
      report.gpu_kernel_ms = stages.kernel_ms;
      report.gpu_setup_ms = stages.setup_ms;
      report.gpu_wait_ms = stages.wait_ms;
      report.gpu_scatter_ms = stages.scatter_ms;
      report.result_wait_ms = stages.result_wait_ms;
      report.index_alloc_ms = stages.index_alloc_ms;
    } catch (...) {
      gpu_error = std::current_exception();
      queue.gpu_returned({}, 0);  // wake the CPU workers waiting on the failed batch
    }
    gpu_end_ms = ms_since(work_start);
  }
  for (std::thread& w : workers) w.join();
  if (gpu_error) std::rethrow_exception(gpu_error);
  if (cpu_error) std::rethrow_exception(cpu_error);
  if (tree_ready.valid()) tree_ready.get();
  if (queue.done() != queue.total())
    detail::fail(ErrorCode::Internal, "knn_join: ", queue.total() - queue.done(), " queries were left unanswered");
  report.gpu_ms = uses_gpu ? gpu_end_ms : 0;
  report.cpu_ms = uses_cpu ? cpu_end_ms : 0;
  report.total_ms = ms_since(start);
  if (mode == JoinMode::Hybrid) report.load_imbalance = std::abs(cpu_end_ms - gpu_end_ms) / report.total_ms;
}

}  // namespace gknn::detail::join
