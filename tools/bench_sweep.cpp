// bench_sweep.cpp: see bench_sweep.hpp.
#include "bench_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>
#include <optional>

#include "cli_common.hpp"
#include "gknn/error.hpp"
#include "gknn/generate.hpp"
#include "gknn/index.hpp"
#include "gknn/info.hpp"

namespace gknn::cli {
namespace {

/// Uniform data of a kind: integers 0..255 (uint8 descriptors) or floats in [0, 1).
HostMatrix<float> sweep_data(int64_t rows, int64_t cols, bool integer, uint64_t seed) {
  GenerateParams g;
  g.seed = seed;
  HostMatrix<float> m = generate(rows, cols, g);
  if (integer)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) m.row(i)[j] = std::floor(m.row(i)[j] * 256.f);
  return m;
}

/// The device a table row names: the CUDA device's name (commas would split the CSV field), or "cpu".
std::string device_name(const SearchParams& params, Backend backend) {
  if (backend != Backend::Cuda) return "cpu";
  for (const DeviceInfo& d : cuda_devices())
    if (d.ordinal == params.device) {
      std::string name = d.name;
      std::replace(name.begin(), name.end(), ',', ' ');
      return name;
    }
  return "cuda";
}

struct Timed {
  DistanceAlgorithm distance;
  SelectAlgorithm select;
  double ms;
};

class CellBench {
 public:
  CellBench(const Index& index, const HostMatrix<float>& queries, const SearchParams& params, int warmup, int repeat)
      : index_(index), queries_(queries), params_(params), warmup_(warmup), repeat_(repeat) {}

  /// Median wall time of the pair in ms; nullopt when the backend refuses it (metric, k, data).
  std::optional<double> time(DistanceAlgorithm distance, SelectAlgorithm select) const {
    SearchParams p = params_;
    p.distance = distance;
    p.select = select;
    try {
      for (int i = 0; i < warmup_; ++i) index_.search(queries_.view(), p);
      std::vector<double> runs;
      for (int i = 0; i < repeat_; ++i) {
        Stopwatch clock;
        index_.search(queries_.view(), p);
        runs.push_back(clock.seconds() * 1000.0);
      }
      return median(runs);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::Unsupported) return std::nullopt;
      throw;
    }
  }

  /// The fastest pair in two rounds, as the test suite covers the algorithms: every distance with Auto's selection,
  /// then every selection (by name: a table row names its algorithms) with the fastest distance.
  std::optional<Timed> best(Backend backend, bool integer) const {
    const auto fastest = [&](auto&& pairs) {
      std::optional<Timed> out;
      for (const auto& [d, s] : pairs)
        if (const std::optional<double> ms = time(d, s); ms && (!out || *ms < out->ms)) out = Timed{d, s, *ms};
      return out;
    };
    std::vector<std::pair<DistanceAlgorithm, SelectAlgorithm>> round;
    for (DistanceAlgorithm d : compiled_distance_algorithms(backend, params_.metric))
      if (d != DistanceAlgorithm::Reference && (integer || !distance_requires_integer_data(d)))
        round.emplace_back(d, SelectAlgorithm::Auto);
    const std::optional<Timed> distance = fastest(round);
    if (!distance) return distance;
    round.clear();
    for (const SelectCapability& s : compiled_select_algorithms(backend))
      if (params_.k <= s.max_k) round.emplace_back(distance->distance, s.algorithm);
    return fastest(round);
  }

 private:
  const Index& index_;
  const HostMatrix<float>& queries_;
  const SearchParams& params_;
  int warmup_, repeat_;
};

/// Appends `rows` to the table at `path` (header first when it is new) through a temporary file renamed onto it,
/// so an interrupted sweep never leaves a half-written table.
void append_rows(const std::string& path, const std::vector<std::string>& rows) {
  std::string text;
  if (std::ifstream in(path); in.good()) text.assign(std::istreambuf_iterator<char>(in), {});
  if (text.empty())
    text = "# gknn bench --sweep (gknn " + build_info().version + ")\n" + std::string(plan_table_header()) + "\n";
  for (const std::string& row : rows) text += row + "\n";
  const std::string temporary = path + ".tmp-sweep";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    GKNN_EXPECT(out.good(), ErrorCode::Io, "--out: cannot write '", temporary, "'");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  GKNN_EXPECT(!error, ErrorCode::Io, "--out: cannot rename '", temporary, "' onto '", path, "': ", error.message());
}

}  // namespace

void SweepOptions::add_to(CLI::App& app) {
  app.add_flag("--sweep", enabled,
               "measure every distance/selection pair on a grid and print the fastest per cell (no --base/--query)");
  app.add_option("--out", out, "with --sweep: append the plan table rows to this file (src/plan/plan_table.csv)");
  app.add_option("--sweep-n", n, "base rows of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-q", q, "query counts of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-d", d, "dimensions of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-k", k, "k of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-metrics", metrics, "metrics (one per class: squared_l2, l1, linf, lp)")
      ->delimiter(',')
      ->check(name_check([](const std::string& s) { parse_metric(s); }, "METRIC"))
      ->capture_default_str();
  app.add_option("--sweep-data", data, "data kinds: integer (0..255) and/or float (uniform [0, 1))")
      ->delimiter(',')
      ->check(CLI::IsMember({"integer", "float"}))
      ->capture_default_str();
}

int run_sweep(const SweepOptions& sweep, const SearchParams& params, int warmup, int repeat) {
  const Backend backend = choose_backend(params).backend;
  const std::string device = device_name(params, backend);
  std::vector<std::string> rows;
  std::printf("sweep        %s (%s), median of %d after %d warm-up\n", device.c_str(), to_string(backend).c_str(),
              repeat, warmup);
  std::printf("%-10s %-7s %8s %6s %4s %5s  %-16s %-16s %10s %10s %6s\n", "metric", "data", "n", "q", "d", "k",
              "distance", "select", "best ms", "auto ms", "ratio");
  double worst = 0;
  std::string worst_cell;
  uint64_t seed = 1;
  for (const std::string& metric_name : sweep.metrics)
    for (const std::string& kind : sweep.data)
      for (int64_t n : sweep.n)
        for (int64_t d : sweep.d) {
          const bool integer = kind == "integer";
          const HostMatrix<float> base = sweep_data(n, d, integer, seed++);
          SearchParams p = params;
          p.metric = parse_metric(metric_name);
          p.p = p.metric == Metric::Lp ? 3.0 : 2.0;
          Index index(d, p.metric, backend);
          index.set_p(p.p);
          index.add(base.view());
          for (int64_t q : sweep.q) {
            const HostMatrix<float> queries = sweep_data(q, d, integer, seed++);
            for (int64_t k : sweep.k) {
              if (k > n) continue;
              p.k = k;
              const CellBench bench(index, queries, p, warmup, repeat);
              const std::optional<Timed> best = bench.best(backend, integer);
              const std::optional<double> auto_ms = bench.time(DistanceAlgorithm::Auto, SelectAlgorithm::Auto);
              if (!best || !auto_ms) continue;
              const double ratio = *auto_ms / best->ms;
              std::printf("%-10s %-7s %8lld %6lld %4lld %5lld  %-16s %-16s %10.3f %10.3f %6.2f\n", metric_name.c_str(),
                          kind.c_str(), (long long)n, (long long)q, (long long)d, (long long)k,
                          to_string(best->distance).c_str(), to_string(best->select).c_str(), best->ms, *auto_ms,
                          ratio);
              std::fflush(stdout);
              if (ratio > worst) {
                worst = ratio;
                worst_cell = metric_name + " " + kind + " n=" + std::to_string(n) + " q=" + std::to_string(q) +
                             " d=" + std::to_string(d) + " k=" + std::to_string(k);
              }
              rows.push_back(
                  plan_table_row(device, p.metric, integer, n, q, d, k, best->distance, best->select, best->ms));
            }
          }
        }
  if (worst > 0) std::printf("worst        Auto / best = %.2f at %s\n", worst, worst_cell.c_str());
  if (!sweep.out.empty()) {
    append_rows(sweep.out, rows);
    std::printf("table        %zu rows appended to %s\n", rows.size(), sweep.out.c_str());
  }
  return 0;
}

}  // namespace gknn::cli
