// gknn search: exact kNN of a query file against a base file; writes indices/distances, prints recall if asked.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "gknn/search.hpp"
#include "progress.hpp"
#include "recall_report.hpp"
#include "search_setup.hpp"

namespace gknn::cli {
namespace {

struct SearchCommand {
  SearchOptions search;
  std::string indices_out;
  std::string distances_out;
  std::string groundtruth;
  bool no_progress = false;

  int run() const {
    check_neighbour_outputs(indices_out, distances_out);  // before any long work
    const SearchParams base_params = search.params();
    const Dataset data = load_dataset(search);
    HostMatrix<int64_t> truth;
    if (!groundtruth.empty()) truth = with_option("--groundtruth", [&] { return load_indices(groundtruth); });

    ProgressBar bar("search", !no_progress);
    SearchParams params = base_params;
    params.progress = bar.callback();
    Stopwatch clock;
    const Result result = run_search(data, search, params);
    const double seconds = clock.seconds();
    bar.finish();

    if (!indices_out.empty()) save_indices(indices_out, MatrixView<const int64_t>{result.indices.data(), result.rows,
                                                                                 result.k, 0});
    if (!distances_out.empty())
      save_matrix(distances_out, FloatView{result.distances.data(), result.rows, result.k, 0});
    print_summary(data, params, seconds);
    if (!groundtruth.empty()) {
      const HostMatrix<float> values = with_option("--groundtruth", [&] {
        return truth_values(groundtruth, data.base.view(), data.queries.view(), truth, params.k, params.metric,
                            params.p);
      });
      print_recall(std::cout, result, truth, values, params.k, params.metric);
    }
    return 0;
  }

  void print_summary(const Dataset& data, const SearchParams& params, double seconds) const {
    std::printf("backend      %s (requested %s)\n", effective_backend(params.backend).c_str(),
                to_string(params.backend).c_str());
    std::printf("algorithms   distance %s, select %s\n", to_string(params.distance).c_str(),
                select_name(params.select, params.select_options.tang).c_str());
    std::printf("base         %lld x %lld  %s\n", static_cast<long long>(data.base.rows),
                static_cast<long long>(data.base.cols), search.base.c_str());
    std::printf("queries      %lld x %lld  %s\n", static_cast<long long>(data.queries.rows),
                static_cast<long long>(data.queries.cols), search.query.c_str());
    std::printf("k, metric    %lld, %s\n", static_cast<long long>(params.k), to_string(params.metric).c_str());
    std::printf("load         %.3f s\n", data.load_seconds);
    std::printf("search       %.3f s  (%.1f queries/s)\n", seconds,
                seconds > 0 ? static_cast<double>(data.queries.rows) / seconds : 0.0);
    std::fflush(stdout);
  }
};

}  // namespace

Command add_search_command(CLI::App& root) {
  auto cmd = std::make_shared<SearchCommand>();
  CLI::App* app = root.add_subcommand("search", "exact k-nearest-neighbour search of --query in --base");
  cmd->search.add_to(*app);
  app->add_option("-o,--output", cmd->indices_out, "write neighbour indices (.ivecs int32 or .npy int64)");
  app->add_option("--distances-out", cmd->distances_out, "write neighbour distances (.fvecs or .npy)");
  app->add_option("--groundtruth", cmd->groundtruth,
                  "exact neighbour ids (.ivecs, .npy or file.hdf5[:neighbors]): print recall@k");
  app->add_flag("--no-progress", cmd->no_progress, "never draw the progress bar");
  return {app, [cmd] { return cmd->run(); }};
}

}  // namespace gknn::cli
