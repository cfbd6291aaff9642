// gknn join: the exact kNN self-join of a point file (each point's k nearest other points), or R ⋈ S with --queries;
// writes indices/distances and prints where the time went (epsilon, ordering, GPU and CPU shares, imbalance).
#include <cstdio>
#include <memory>

#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "gknn/join.hpp"
#include "gknn/sharded_index.hpp"
#include "progress.hpp"
#include "scale_search.hpp"

namespace gknn::cli {
namespace {

struct JoinCommand {
  std::string input;
  std::string queries;
  int64_t k = 32;
  std::string mode = "auto";
  std::string metric = "squared_l2";
  JoinParams params;
  std::string indices_out;
  std::string distances_out;
  bool no_progress = false;
  ScaleOptions scale;

  int run() {
    check_neighbour_outputs(indices_out, distances_out);
    const HostMatrix<float> points = with_option("--input", [&] { return load_matrix(input); });
    GKNN_EXPECT(queries.empty() || !scale.local(), ErrorCode::Unsupported,
                "--queries: R ⋈ S runs on one device; --devices/--cpu-shards/--replicate apply to the self-join");
    HostMatrix<float> query_points;
    if (!queries.empty()) query_points = with_option("--queries", [&] { return load_matrix(queries); });
    params.mode = parse_join_mode(mode);
    params.metric = parse_metric(metric);
    JoinReport report;
    params.report = &report;
    ProgressBar bar("join", !no_progress);
    params.progress = bar.callback();
    Stopwatch clock;
    const Result result = [&] {
      if (!queries.empty()) return knn_join(query_points.view(), points.view(), k, params);
      if (!scale.local()) return knn_join(points.view(), k, params);
      return knn_join(points.view(), k, local_shards(scale, Backend::Auto), scale.mode(), params);
    }();
    const double seconds = clock.seconds();
    bar.finish();
    if (!indices_out.empty())
      save_indices(indices_out, MatrixView<const int64_t>{result.indices.data(), result.rows, result.k, 0});
    if (!distances_out.empty())
      save_matrix(distances_out, FloatView{result.distances.data(), result.rows, result.k, 0});
    print_report(points, result, report, seconds);
    return 0;
  }

  void print_report(const HostMatrix<float>& points, const Result& result, const JoinReport& r, double seconds) const {
    std::printf("join         %lld x %lld %s, %lld queries, k=%lld, %s, mode %s\n", (long long)points.rows,
                (long long)points.cols, queries.empty() ? "self-join" : "base", (long long)result.rows, (long long)k,
                metric.c_str(), to_string(r.mode).c_str());
    if (!r.note.empty()) std::printf("note         %s\n", r.note.c_str());
    std::printf("time         %.3f s (library %.1f ms)\n", seconds, r.total_ms);
    std::printf("phases       result %.1f ms, epsilon %.1f ms, ordering %.1f ms, GPU upload %.1f ms, GPU grid %.1f ms, "
                "kd-tree %.1f ms, GPU side %.1f ms, CPU side %.1f ms\n",
                r.result_ms, r.epsilon_ms, r.ordering_ms, r.upload_ms, r.index_ms, r.cpu_index_ms, r.gpu_ms, r.cpu_ms);
    if (r.gpu_batches > 0)
      std::printf("GPU stages   kernels %.1f ms (device); host: grid buffers %.1f ms, chunk buffers %.1f ms, waiting for "
                  "rows %.1f ms, scatter into the result %.1f ms, waiting for the result %.1f ms\n",
                  r.gpu_kernel_ms, r.index_alloc_ms, r.gpu_setup_ms, r.gpu_wait_ms, r.gpu_scatter_ms, r.result_wait_ms);
    const double all = double(std::max<int64_t>(1, r.gpu_queries + r.cpu_queries + r.brute_force_queries));
    std::printf("share        GPU %lld queries (%.1f%%, %lld batches), CPU %lld (%.1f%%, %lld batches)\n",
                (long long)r.gpu_queries, 100.0 * double(r.gpu_queries) / all, (long long)r.gpu_batches,
                (long long)r.cpu_queries, 100.0 * double(r.cpu_queries) / all, (long long)r.cpu_batches);
    std::printf("grid         epsilon %.6g (sampled), final cell side %.6g, %lld re-indexings, %lld failed GPU "
                "queries\n",
                r.epsilon_min, r.epsilon_final, (long long)r.reindexings, (long long)r.failed_queries);
    if (r.mode == JoinMode::Hybrid) std::printf("imbalance    %.3f (|T_cpu - T_gpu| / T)\n", r.load_imbalance);
  }
};

}  // namespace

Command add_join_command(CLI::App& root) {
  auto cmd = std::make_shared<JoinCommand>();
  CLI::App* app = root.add_subcommand("join", "exact kNN self-join of a low-dimensional point set (hybrid CPU/GPU)");
  app->add_option("--input", cmd->input, "points (.npy, .fvecs, .bvecs, .hdf5[:dataset]); the base with --queries")
      ->required();
  app->add_option("--queries", cmd->queries, "R ⋈ S: the k nearest input points of each of these (nothing excluded)");
  app->add_option("-k,--k", cmd->k, "neighbours per point")->check(positive())->capture_default_str();
  app->add_option("--mode", cmd->mode, "auto, hybrid, cpu, gpu or round_robin")
      ->check(name_check([](const std::string& s) { parse_join_mode(s); }, "MODE"))
      ->capture_default_str();
  app->add_option("--metric", cmd->metric, "squared_l2 or l2")
      ->check(name_check([](const std::string& s) { parse_metric(s); }, "METRIC"))
      ->capture_default_str();
  app->add_option("--epsilon", cmd->params.epsilon, "initial search distance (0: chosen by sampling)")
      ->check(non_negative())
      ->capture_default_str();
  app->add_option("--threads-per-query", cmd->params.threads_per_query, "t: GPU threads per query (1, 2, 4, ..., 32)")
      ->capture_default_str();
  app->add_option("--rings", cmd->params.rings,
                  "rings of cells a GPU query may grow through before it fails (1: the seed; 0: auto; default: 1 for an "
                  "explicit mode, the plan's choice for auto)")
      ->check(non_negative())
      ->capture_default_str();
  app->add_option("--n-large", cmd->params.n_large, "first monolithic GPU batch (fraction of the points)")
      ->capture_default_str();
  app->add_option("--n-small", cmd->params.n_small, "GPU batch after the monolithic rounds")->capture_default_str();
  app->add_option("--n-cpu", cmd->params.n_cpu, "CPU batch")->capture_default_str();
  app->add_option("--cpu-window", cmd->params.cpu_window, "fraction reserved for the CPU during monolithic rounds")
      ->capture_default_str();
  app->add_option("--threads", cmd->params.cpu_threads, "CPU worker threads (0: all; hybrid leaves one to the GPU)")
      ->check(non_negative());
  app->add_option("--device", cmd->params.device, "CUDA device")->check(non_negative());
  app->add_option("-o,--indices-out", cmd->indices_out, "neighbour indices (.npy int64 or .ivecs)");
  app->add_option("--distances-out", cmd->distances_out, "neighbour distances (.npy or .fvecs)");
  app->add_flag("--no-progress", cmd->no_progress, "no progress bar");
  cmd->scale.add_to(*app);
  return {app, [cmd] { return cmd->run(); }};
}

}  // namespace gknn::cli
