// gknn recall: recall@k of a stored result against a stored ground truth, by both definitions in use.
#include <iostream>
#include <memory>

#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "recall_report.hpp"

namespace gknn::cli {
namespace {

struct RecallCommand {
  std::string result_path;
  std::string truth_path;
  int64_t k = 0;
  std::string result_distances;
  std::string truth_distances;
  std::string metric = "squared_l2";

  int run() const {
    const HostMatrix<int64_t> result_ids = with_option("--result", [&] { return load_indices(result_path); });
    const HostMatrix<int64_t> truth = with_option("--groundtruth", [&] { return load_indices(truth_path); });
    const int64_t kk = k > 0 ? k : result_ids.cols;
    GKNN_EXPECT(kk <= result_ids.cols, ErrorCode::InvalidArgument, "-k ", kk, " exceeds the ", result_ids.cols,
                " neighbours per query in --result '", result_path, "'");
    GKNN_EXPECT(kk <= truth.cols, ErrorCode::InvalidArgument, "-k ", kk, " exceeds the ", truth.cols,
                " neighbours per query in --groundtruth '", truth_path, "'");
    GKNN_EXPECT(truth.rows == result_ids.rows, ErrorCode::InvalidArgument, "--result '", result_path, "' has ",
                result_ids.rows, " rows but --groundtruth '", truth_path, "' has ", truth.rows);
    const Metric m = parse_metric(metric);

    HostMatrix<float> values;
    if (!result_distances.empty()) {
      values = with_option("--result-distances", [&] { return load_matrix(result_distances); });
      GKNN_EXPECT(values.rows == result_ids.rows && values.cols == result_ids.cols, ErrorCode::InvalidArgument,
                  "--result-distances '", result_distances, "' is ", values.rows, " x ", values.cols,
                  " but --result is ", result_ids.rows, " x ", result_ids.cols);
    }
    HostMatrix<float> truth_values;
    if (!result_distances.empty()) {
      truth_values = truth_distances.empty()
                         ? with_option("--groundtruth", [&] { return stored_truth_values(truth_path, kk, m); })
                         : first_columns(with_option("--groundtruth-distances",
                                                     [&] { return load_matrix(truth_distances); }),
                                         kk, "--groundtruth-distances");
      GKNN_EXPECT(truth_values.rows == 0 || truth_values.rows == truth.rows, ErrorCode::InvalidArgument,
                  "ground-truth distances have ", truth_values.rows, " rows, the ground truth has ", truth.rows);
    }
    const Result result = as_result(result_ids, values.rows ? &values : nullptr);
    print_recall(std::cout, result, truth, truth_values, kk, m);
    return 0;
  }
};

}  // namespace

Command add_recall_command(CLI::App& root) {
  auto cmd = std::make_shared<RecallCommand>();
  CLI::App* app = root.add_subcommand(
      "recall",
      "recall@k of a result against ground truth.\n"
      "  ids:      mean over queries of |result[:k] & truth[:k]| / k (FAISS/TEXMEX)\n"
      "  distance: mean fraction of result[:k] whose distance is <= the k-th true distance + 1e-3 (ann-benchmarks;\n"
      "            for similarities >= k-th - 1e-3); needs --result-distances and ground-truth distances");
  app->add_option("--result", cmd->result_path, "neighbour ids (.ivecs, .npy)")->required();
  app->add_option("--groundtruth", cmd->truth_path, "exact ids (.ivecs, .npy, file.hdf5[:neighbors])")->required();
  app->add_option("-k,--k", cmd->k, "k of recall@k (default: the result's width)")->check(positive());
  app->add_option("--result-distances", cmd->result_distances, "distances of the result (.fvecs, .npy)");
  app->add_option("--groundtruth-distances", cmd->truth_distances,
                  "true distances (.fvecs, .npy); default: the HDF5 ground truth's distances");
  app->add_option("--metric", cmd->metric, "metric of the distances (similarities compare the other way)")
      ->check(name_check([](const std::string& s) { parse_metric(s); }, "METRIC"))
      ->capture_default_str();
  return {app, [cmd] { return cmd->run(); }};
}

}  // namespace gknn::cli
