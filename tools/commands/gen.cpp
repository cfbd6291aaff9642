// gknn gen: reproducible synthetic base and query sets, optionally with their exact ground truth.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "gknn/generate.hpp"
#include "gknn/io.hpp"
#include "gknn/search.hpp"
#include "progress.hpp"

namespace gknn::cli {
namespace {

/// Rows [first, first + count) of m as a new matrix.
HostMatrix<float> take_rows(const HostMatrix<float>& m, int64_t first, int64_t count) {
  HostMatrix<float> out(count, m.cols);
  std::copy(m.row(first), m.row(first) + count * m.cols, out.data.begin());
  return out;
}

/// Maps values affinely from their [min, max] onto the integers 0..255, like SIFT descriptors. Up to dimension 129,
/// integer data keeps every float32 distance exact, even through the GEMM norm expansion |x|^2 + |y|^2 - 2x.y
/// (2 * 129 * 255^2 < 2^24), so fast kernels and the float64 oracle agree bit for bit, ties included.
void quantize_to_bytes(HostMatrix<float>& m) {
  if (m.data.empty()) return;
  const auto [lo, hi] = std::minmax_element(m.data.begin(), m.data.end());
  const double low = *lo, range = *hi - *lo;
  for (float& v : m.data)
    v = range > 0 ? static_cast<float>(std::min(255.0, std::floor((v - low) / range * 256.0))) : 0.f;
}

std::vector<uint8_t> as_bytes(const HostMatrix<float>& m) {
  std::vector<uint8_t> out(m.data.size());
  std::transform(m.data.begin(), m.data.end(), out.begin(), [](float v) { return static_cast<uint8_t>(v); });
  return out;
}

struct GenCommand {
  int64_t rows = 0;
  int64_t dim = 0;
  std::string distribution = "uniform";
  uint64_t seed = 42;
  int clusters = 16;
  double lambda = 40.0;
  bool uint8 = false;
  std::string output;
  int64_t queries = 0;
  std::string queries_out;
  std::string groundtruth_out;
  int64_t k = 100;
  std::string metric = "squared_l2";
  double p = 2.0;

  void check_outputs() const {
    check_vectors_path(output, "-o");
    GKNN_EXPECT(queries == 0 || !queries_out.empty(), ErrorCode::InvalidArgument,
                "--queries needs --queries-out (where to write them)");
    GKNN_EXPECT(queries_out.empty() || queries > 0, ErrorCode::InvalidArgument,
                "--queries-out needs --queries N (how many to generate)");
    GKNN_EXPECT(groundtruth_out.empty() || queries > 0, ErrorCode::InvalidArgument,
                "--groundtruth-out needs --queries N and --queries-out");
    if (!queries_out.empty()) check_vectors_path(queries_out, "--queries-out");
    if (!groundtruth_out.empty()) {
      const std::string ext = extension_of(groundtruth_out);
      GKNN_EXPECT(ext == "ivecs" || ext == "npy", ErrorCode::InvalidArgument, "--groundtruth-out: '",
                  groundtruth_out, "' must end in .ivecs or .npy");
      ensure_writable(groundtruth_out, "--groundtruth-out");
    }
  }

  void check_vectors_path(const std::string& path, const std::string& option) const {
    const std::string ext = extension_of(path);
    GKNN_EXPECT(ext == "fvecs" || ext == "npy" || (ext == "bvecs" && uint8), ErrorCode::InvalidArgument, option,
                ": '", path, "' must end in .fvecs or .npy", uint8 ? " or .bvecs" : " (.bvecs needs --uint8)");
    ensure_writable(path, option);
  }

  void save(const std::string& path, const HostMatrix<float>& m) const {
    const std::string ext = extension_of(path);
    if (!uint8 || ext == "fvecs") return save_matrix(path, m.view());
    const std::vector<uint8_t> bytes = as_bytes(m);
    const MatrixView<const uint8_t> view{bytes.data(), m.rows, m.cols, 0};
    if (ext == "bvecs") write_bvecs(path, view);
    else write_npy(path, view);
  }

  int run() const {
    check_outputs();
    GenerateParams gen{parse_distribution(distribution), seed, clusters, lambda};
    // One draw for base and queries so that both come from the same distribution (same cluster centres).
    HostMatrix<float> all = generate(rows + queries, dim, gen);
    if (uint8) quantize_to_bytes(all);
    const HostMatrix<float> base = take_rows(all, 0, rows);
    save(output, base);
    std::printf("base         %lld x %lld %s%s -> %s\n", static_cast<long long>(rows), static_cast<long long>(dim),
                distribution.c_str(), uint8 ? " (uint8)" : "", output.c_str());
    if (queries == 0) return 0;
    const HostMatrix<float> query = take_rows(all, rows, queries);
    save(queries_out, query);
    std::printf("queries      %lld x %lld -> %s\n", static_cast<long long>(queries), static_cast<long long>(dim),
                queries_out.c_str());
    if (!groundtruth_out.empty()) write_groundtruth(base, query);
    return 0;
  }

  void write_groundtruth(const HostMatrix<float>& base, const HostMatrix<float>& query) const {
    SearchParams params;
    params.k = k;
    params.metric = parse_metric(metric);
    params.p = p;
    params.backend = Backend::Cpu;
    params.distance = DistanceAlgorithm::Reference;  // the float64 oracle: the ground truth must be exact
    ProgressBar bar("ground truth");
    params.progress = bar.callback();
    Stopwatch clock;
    const Result truth = search(base.view(), query.view(), params);
    bar.finish();
    save_indices(groundtruth_out, MatrixView<const int64_t>{truth.indices.data(), truth.rows, truth.k, 0});
    std::printf("groundtruth  k=%lld %s (cpu reference, %.2f s) -> %s\n", static_cast<long long>(k), metric.c_str(),
                clock.seconds(), groundtruth_out.c_str());
  }
};

}  // namespace

Command add_gen_command(CLI::App& root) {
  auto cmd = std::make_shared<GenCommand>();
  CLI::App* app = root.add_subcommand("gen", "generate a reproducible synthetic dataset (fixed seed)");
  app->add_option("--rows", cmd->rows, "base vectors")->required()->check(positive());
  app->add_option("--dim", cmd->dim, "dimension")->required()->check(positive());
  app->add_option("--distribution", cmd->distribution, "uniform, gaussian, clusters or exponential (expo)")
      ->check(name_check([](const std::string& s) { parse_distribution(s); }, "DISTRIBUTION"))
      ->capture_default_str();
  app->add_option("--seed", cmd->seed, "random seed")->capture_default_str();
  app->add_option("--clusters", cmd->clusters, "number of Gaussian clusters")
      ->check(positive())
      ->capture_default_str();
  app->add_option("--lambda", cmd->lambda, "rate of the exponential distribution")
      ->check(positive())
      ->capture_default_str();
  app->add_flag("--uint8", cmd->uint8, "scale values onto the integers 0..255 (SIFT-like; allows .bvecs)");
  app->add_option("-o,--output", cmd->output, "base file: .fvecs, .npy (or .bvecs with --uint8)")->required();
  app->add_option("--queries", cmd->queries, "also generate this many queries")->check(non_negative());
  app->add_option("--queries-out", cmd->queries_out, "query file (.fvecs, .npy, .bvecs with --uint8)");
  app->add_option("--groundtruth-out", cmd->groundtruth_out, "exact ground truth of the queries (.ivecs or .npy)");
  app->add_option("-k,--k", cmd->k, "neighbours in the ground truth")->check(positive())->capture_default_str();
  app->add_option("--metric", cmd->metric, "metric of the ground truth")
      ->check(name_check([](const std::string& s) { parse_metric(s); }, "METRIC"))
      ->capture_default_str();
  app->add_option("-p,--p", cmd->p, "exponent of --metric lp")->check(positive())->capture_default_str();
  return {app, [cmd] { return cmd->run(); }};
}

}  // namespace gknn::cli
