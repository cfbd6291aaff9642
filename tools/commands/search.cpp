// gknn search: exact kNN of a query file against a base file; writes indices/distances, prints recall if asked.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "gknn/search.hpp"
#include "oracle_sample.hpp"
#include "progress.hpp"
#include "recall_report.hpp"
#include "scale_search.hpp"
#include "search_setup.hpp"
#include "timed_search.hpp"

namespace gknn::cli {
namespace {

struct SearchCommand {
  SearchOptions search;
  ScaleOptions scale;
  std::string indices_out;
  std::string distances_out;
  std::string groundtruth;
  bool no_progress = false;
  int repeat = 1;
  int64_t oracle_sample = 0;
  bool explain = false;

  int run() const {
    check_neighbour_outputs(indices_out, distances_out);  // before any long work
    const SearchParams base_params = search.params();
    const std::string backend = backend_description(base_params);  // an impossible combination fails before loading
    const Dataset data = load_scaled_dataset(search, scale, groundtruth);
    HostMatrix<int64_t> truth;
    if (!groundtruth.empty()) truth = with_option("--groundtruth", [&] { return load_indices(groundtruth); });

    if (explain && output_rank())  // the plan of one search over these rows (each shard plans its own part alike)
      std::printf("%s", naming_inputs(search, [&] {
                          return to_string(explain_search(data.base.view(), data.queries.view(), base_params));
                        }).c_str());
    ProgressBar bar("search", !no_progress && output_rank());
    SearchParams params = base_params;
    params.progress = bar.callback();
    // Several shards or ranks: one timed search on that layout; otherwise cold + warm searches of one Index.
    SearchTimings timings;
    if (scale.active()) {
      Stopwatch clock;
      timings.result = run_scaled_search(data, search, scale, params);
      timings.cold_ms = clock.seconds() * 1000.0;
    } else {
      timings = timed_search(data, search, params, repeat);
    }
    bar.finish();
    if (!output_rank()) return 0;  // MPI ranks > 0: rank 0 writes and prints
    const Result& result = timings.result;

    if (!indices_out.empty()) save_indices(indices_out, MatrixView<const int64_t>{result.indices.data(), result.rows,
                                                                                 result.k, 0});
    if (!distances_out.empty())
      save_matrix(distances_out, FloatView{result.distances.data(), result.rows, result.k, 0});
    print_summary(data, params, scale.active() ? std::string("sharded (see the line above)") : backend);
    if (scale.active())
      std::printf("search       %10.3f ms  wall time of the sharded search\n", timings.cold_ms);
    else
      print_timings(timings, data);
    if (!groundtruth.empty()) {
      const HostMatrix<float> values = with_option("--groundtruth", [&] {
        return truth_values(groundtruth, data.base.view(), data.queries.view(), truth, params.k, params.metric,
                            params.p);
      });
      print_recall(std::cout, result, truth, values, params.k, params.metric);
    }
    return oracle_sample > 0 ? report_oracle_check(data, params, result) : 0;
  }

  void print_summary(const Dataset& data, const SearchParams& params, const std::string& backend) const {
    std::printf("backend      %s\n", backend.c_str());
    std::printf("algorithms   distance %s, select %s\n", to_string(params.distance).c_str(),
                select_name(params.select, params.select_options.tang).c_str());
    std::printf("base         %lld x %lld  %s\n", static_cast<long long>(base_rows(data)),
                static_cast<long long>(data.base.cols), search.base.c_str());
    std::printf("queries      %lld x %lld  %s\n", static_cast<long long>(data.queries.rows),
                static_cast<long long>(data.queries.cols), search.query.c_str());
    std::printf("k, metric    %lld, %s\n", static_cast<long long>(params.k), to_string(params.metric).c_str());
    std::printf("load         %10.3f ms  reading the files\n", data.load_seconds * 1000.0);
    std::fflush(stdout);
  }

  /// Prints the sample check; exit status 1 when a sampled query's ids differ from the reference's.
  int report_oracle_check(const Dataset& data, const SearchParams& params, const Result& result) const {
    const SampleCheck c = check_against_oracle(data, params, result, oracle_sample);
    std::printf("oracle       %lld of %lld sampled queries (one in %lld) with ids identical to the float64 CPU "
                "reference (%.1f s)\n",
                static_cast<long long>(c.identical), static_cast<long long>(c.checked),
                static_cast<long long>(c.step), c.seconds);
    std::fflush(stdout);
    if (c.identical == c.checked) return 0;
    std::fprintf(stderr, "gknn: error: --oracle-sample: %lld of %lld sampled queries differ from the float64 CPU "
                 "reference (first: query %lld)\n", static_cast<long long>(c.checked - c.identical),
                 static_cast<long long>(c.checked), static_cast<long long>(c.first_difference));
    return 1;
  }
};

}  // namespace

Command add_search_command(CLI::App& root) {
  auto cmd = std::make_shared<SearchCommand>();
  CLI::App* app = root.add_subcommand("search", "exact k-nearest-neighbour search of --query in --base");
  cmd->search.add_to(*app);
  cmd->scale.add_to(*app);
  app->add_option("-o,--output", cmd->indices_out, "write neighbour indices (.ivecs int32 or .npy int64)");
  app->add_option("--distances-out", cmd->distances_out, "write neighbour distances (.fvecs or .npy)");
  app->add_option("--groundtruth", cmd->groundtruth,
                  "exact neighbour ids (.ivecs, .npy or file.hdf5[:neighbors]): print recall@k");
  app->add_flag("--no-progress", cmd->no_progress, "never draw the progress bar");
  app->add_flag("--explain", cmd->explain, "print the plan (backend, distance and selection algorithms) and why");
  app->add_option("--repeat", cmd->repeat, "warm searches after the first (cold) one; the search time is their median")
      ->check(non_negative())
      ->capture_default_str();
  app->add_option("--oracle-sample", cmd->oracle_sample,
                  "check the ids of N evenly spaced queries against the float64 CPU reference (exit 1 when any "
                  "differs; meant for integer data, where float32 distances are exact)")
      ->check(non_negative());
  return {app, [cmd] { return cmd->run(); }};
}

}  // namespace gknn::cli
