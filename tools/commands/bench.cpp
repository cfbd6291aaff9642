// gknn bench: time per stage (load, search, and the search split into distances and selection), median of
// --repeat runs, as a table or as JSON.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <vector>

#include "bench_suite.hpp"
#include "bench_sweep.hpp"
#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "json_writer.hpp"
#include "progress.hpp"
#include "search_setup.hpp"

namespace gknn::cli {
namespace {

struct Timings {
  double load = 0;
  std::vector<double> search_runs;
  std::vector<double> k1_runs;  // empty when the split was not asked for
  double search() const { return median(search_runs); }
  /// The backends fuse distances and selection tile by tile, so the stages cannot be timed apart inside one
  /// search. A k = 1 search does the same distance work with a trivial running-minimum selection: its time
  /// estimates the distance stage, and the rest of the k search estimates the selection stage.
  double distances() const { return median(k1_runs); }
  double selection() const { return std::max(0.0, search() - distances()); }
  bool split() const { return !k1_runs.empty(); }
};

struct BenchCommand {
  SearchOptions search;
  int repeat = 3;
  int warmup = 1;
  bool json = false;
  bool no_split = false;
  SweepOptions sweep;
  SuiteOptions suite;

  std::vector<double> time_runs(const Dataset& data, const SearchParams& params, const char* label) const {
    for (int i = 0; i < warmup; ++i) run_search(data, search, params);
    std::vector<double> runs;
    for (int i = 0; i < repeat; ++i) {
      ProgressBar bar(std::string(label) + " " + std::to_string(i + 1) + "/" + std::to_string(repeat), !json);
      SearchParams p = params;
      p.progress = bar.callback();
      Stopwatch clock;
      run_search(data, search, p);
      runs.push_back(clock.seconds());
    }
    return runs;
  }

  int run() const {
    const SearchParams params = search.params();
    if (sweep.enabled) return run_sweep(sweep, params, warmup, repeat);
    if (suite.enabled) return run_suite(suite, search.backend);
    GKNN_EXPECT(!search.base.empty() && !search.query.empty(), ErrorCode::InvalidArgument,
                "bench: --base and --query are required (or --sweep or --suite, which generate their data)");
    const Dataset data = load_dataset(search);
    Timings t;
    t.load = data.load_seconds;
    t.search_runs = time_runs(data, params, "search");
    if (!no_split && params.k > 1) {
      SearchParams k1 = params;
      k1.k = 1;
      t.k1_runs = time_runs(data, k1, "k=1");
    }
    if (json) print_json(data, params, t);
    else print_table(data, params, t);
    return 0;
  }

  double throughput(const Dataset& data, double seconds) const {
    return seconds > 0 ? static_cast<double>(data.queries.rows) / seconds : 0.0;
  }

  void print_table(const Dataset& data, const SearchParams& params, const Timings& t) const {
    std::printf("backend      %s, distance %s, select %s, metric %s, k %lld\n",
                backend_description(params).c_str(), to_string(params.distance).c_str(),
                select_name(params.select, params.select_options.tang).c_str(), to_string(params.metric).c_str(),
                static_cast<long long>(params.k));
    std::printf("shapes       base %lld x %lld, queries %lld\n", static_cast<long long>(data.base.rows),
                static_cast<long long>(data.base.cols), static_cast<long long>(data.queries.rows));
    std::printf("load         %.4f s\n", t.load);
    std::printf("search       %.4f s  median of %d  (%.1f queries/s)\n", t.search(), repeat,
                throughput(data, t.search()));
    if (t.split()) {
      std::printf("  distances  %.4f s  (estimate: the same search with k = 1)\n", t.distances());
      std::printf("  selection  %.4f s  (estimate: search - distances)\n", t.selection());
    }
    std::printf("total        %.4f s  (load + search)\n", t.load + t.search());
  }

  void print_json(const Dataset& data, const SearchParams& params, const Timings& t) const {
    JsonWriter w(std::cout);
    w.begin_object();
    w.key("gknn_version").value(build_info().version);
    w.key("backend").value(to_string(choose_backend(params).backend));
    w.key("distance").value(to_string(params.distance));
    w.key("select").value(select_name(params.select, params.select_options.tang));
    w.key("metric").value(to_string(params.metric));
    w.key("k").value(static_cast<long long>(params.k));
    w.key("threads").value(params.threads);
    w.key("base").begin_object().key("path").value(search.base);
    w.key("rows").value(static_cast<long long>(data.base.rows));
    w.key("cols").value(static_cast<long long>(data.base.cols)).end_object();
    w.key("queries").begin_object().key("path").value(search.query);
    w.key("rows").value(static_cast<long long>(data.queries.rows)).end_object();
    w.key("repeat").value(repeat);
    w.key("stages_s").begin_object();
    w.key("load").value(t.load).key("search").value(t.search());
    if (t.split()) w.key("distances_estimate").value(t.distances()).key("selection_estimate").value(t.selection());
    w.key("total").value(t.load + t.search()).end_object();
    w.key("search_runs_s").begin_array();
    for (double s : t.search_runs) w.value(s);
    w.end_array();
    w.key("queries_per_s").value(throughput(data, t.search()));
    w.end_object();
    std::cout << '\n';
  }
};

}  // namespace

Command add_bench_command(CLI::App& root) {
  auto cmd = std::make_shared<BenchCommand>();
  CLI::App* app = root.add_subcommand("bench", "time the stages of a search (median of --repeat runs)");
  cmd->search.add_to(*app, false);  // --sweep generates its data; the other runs check --base/--query
  app->add_option("--repeat", cmd->repeat, "timed runs")->check(positive())->capture_default_str();
  app->add_option("--warmup", cmd->warmup, "untimed runs first")->check(non_negative())->capture_default_str();
  app->add_flag("--json", cmd->json, "print one JSON object instead of the table");
  app->add_flag("--no-split", cmd->no_split, "skip the k = 1 runs that split distances from selection");
  cmd->sweep.add_to(*app);
  cmd->suite.add_to(*app, app->get_option("--sweep"));
  return {app, [cmd] { return cmd->run(); }};
}

}  // namespace gknn::cli
