// bench_sweep.cpp: see bench_sweep.hpp.
#include "bench_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
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
  int runs;  ///< 1: stopped after its first run, already slower than the cutoff (its time is a lower bound)
};

class CellBench {
 public:
  CellBench(const Index& index, const HostMatrix<float>& queries, const SearchParams& params, int warmup, int repeat)
      : index_(index), queries_(queries), params_(params), warmup_(warmup), repeat_(repeat) {}

  /// Median wall time of the pair in ms after the warm-up; nullopt when the backend refuses the pair (metric, k,
  /// data). A pair whose first run already exceeds `cutoff_ms` is not run again: the slow kernels of a large cell
  /// would otherwise take minutes to lose.
  std::optional<Timed> time(DistanceAlgorithm distance, SelectAlgorithm select, double cutoff_ms) const {
    SearchParams p = params_;
    p.distance = distance;
    p.select = select;
    try {
      const double first = run_ms(p);
      if (first > cutoff_ms) return Timed{distance, select, first, 1};
      for (int i = 1; i < warmup_; ++i) run_ms(p);
      std::vector<double> runs;
      for (int i = 0; i < repeat_; ++i) runs.push_back(run_ms(p));
      return Timed{distance, select, median(runs), repeat_};
    } catch (const Error& e) {
      if (e.code() == ErrorCode::Unsupported) return std::nullopt;
      throw;
    }
  }

  /// The fastest pair in two rounds, as the test suite covers the algorithms: every distance with Auto's selection,
  /// then every selection (by name: a table row names its algorithms) with the fastest distance. Every timing goes
  /// to `all`; a candidate is cut off at 4x the fastest so far.
  std::optional<Timed> best(Backend backend, bool integer, std::vector<Timed>& all) const {
    const auto fastest = [&](const std::vector<std::pair<DistanceAlgorithm, SelectAlgorithm>>& pairs) {
      std::optional<Timed> out;
      for (const auto& [d, s] : pairs) {
        const double cutoff = out ? 4 * out->ms : std::numeric_limits<double>::infinity();
        const std::optional<Timed> t = time(d, s, cutoff);
        if (!t) continue;
        all.push_back(*t);
        if (!out || t->ms < out->ms) out = t;
      }
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
  double run_ms(const SearchParams& p) const {
    Stopwatch clock;
    index_.search(queries_.view(), p);
    return clock.seconds() * 1000.0;
  }

  const Index& index_;
  const HostMatrix<float>& queries_;
  const SearchParams& params_;
  int warmup_, repeat_;
};

/// The long-format CSV of every timing of the sweep (--csv), for bench/suite/report.py.
class TimingsCsv {
 public:
  static constexpr const char* kHeader =
      "device,metric,data,n,q,d,k,path,distance,select,ms,runs,auto_distance,auto_select";

  void add(const std::string& cell, const char* path, const Timed& t, const SearchPlan& plan) {
    lines_.push_back(cell + "," + path + "," + to_string(t.distance) + "," + to_string(t.select) + "," +
                     std::to_string(t.ms) + "," + std::to_string(t.runs) + "," + to_string(plan.distance) + "," +
                     to_string(plan.select));
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::vector<std::string> lines_;
};

/// Writes `text` to `path` through a temporary file renamed onto it, so an interrupted sweep never leaves a
/// half-written file.
void write_whole(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp-sweep";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    GKNN_EXPECT(out.good(), ErrorCode::Io, "cannot write '", temporary, "'");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  GKNN_EXPECT(!error, ErrorCode::Io, "cannot rename '", temporary, "' onto '", path, "': ", error.message());
}

/// Appends plan table rows to the table at `path` (header first when it is new).
void append_rows(const std::string& path, const std::vector<std::string>& rows) {
  std::string text;
  if (std::ifstream in(path); in.good()) text.assign(std::istreambuf_iterator<char>(in), {});
  if (text.empty())
    text = "# gknn bench --sweep (gknn " + build_info().version + ")\n" + std::string(plan_table_header()) + "\n";
  for (const std::string& row : rows) text += row + "\n";
  write_whole(path, text);
}

}  // namespace

void SweepOptions::add_to(CLI::App& app) {
  app.add_flag("--sweep", enabled,
               "measure every distance/selection pair on a grid and print the fastest per cell (no --base/--query)");
  app.add_option("--out", out, "with --sweep: append the plan table rows to this file (src/plan/plan_table.csv)");
  app.add_option("--csv", csv, "with --sweep: write every timing (each candidate pair and Auto, per cell) here");
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
  if (!sweep.out.empty()) ensure_writable(sweep.out, "--out");  // a typo fails before the long work
  if (!sweep.csv.empty()) ensure_writable(sweep.csv, "--csv");
  const Backend backend = choose_backend(params).backend;
  const std::string device = device_name(params, backend);
  std::vector<std::string> rows;
  TimingsCsv timings;
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
          p.backend = backend;
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
              std::vector<Timed> all;
              const std::optional<Timed> best = bench.best(backend, integer, all);
              const std::optional<Timed> automatic =
                  bench.time(DistanceAlgorithm::Auto, SelectAlgorithm::Auto, std::numeric_limits<double>::infinity());
              if (!best || !automatic) continue;
              const SearchPlan plan = explain_search(base.view(), queries.view(), p);
              const std::string cell = device + "," + metric_name + "," + kind + "," + std::to_string(n) + "," +
                                       std::to_string(q) + "," + std::to_string(d) + "," + std::to_string(k);
              for (const Timed& t : all) timings.add(cell, "candidate", t, plan);
              timings.add(cell, "auto", *automatic, plan);
              const double ratio = automatic->ms / best->ms;
              std::printf("%-10s %-7s %8lld %6lld %4lld %5lld  %-16s %-16s %10.3f %10.3f %6.2f\n", metric_name.c_str(),
                          kind.c_str(), (long long)n, (long long)q, (long long)d, (long long)k,
                          to_string(best->distance).c_str(), to_string(best->select).c_str(), best->ms, automatic->ms,
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
    with_option("--out", [&] { append_rows(sweep.out, rows); });
    std::printf("table        %zu rows appended to %s\n", rows.size(), sweep.out.c_str());
  }
  if (!sweep.csv.empty()) {
    std::string text = std::string(TimingsCsv::kHeader) + "\n";
    for (const std::string& line : timings.lines()) text += line + "\n";
    with_option("--csv", [&] { write_whole(sweep.csv, text); });
    std::printf("timings      %zu rows written to %s\n", timings.lines().size(), sweep.csv.c_str());
  }
  return 0;
}

}  // namespace gknn::cli
