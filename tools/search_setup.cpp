#include "search_setup.hpp"

#include "cli_common.hpp"
#include "gknn/error.hpp"
#include "gknn/search.hpp"

namespace gknn::cli {

void SearchOptions::add_to(CLI::App& app, bool inputs_required) {
  app.add_option("--base", base, "database vectors: .fvecs, .bvecs, .npy or file.hdf5[:train|:test]")
      ->required(inputs_required);
  app.add_option("--query", query, "query vectors (same formats; file.hdf5:test for ann-benchmarks)")
      ->required(inputs_required);
  app.add_option("-k,--k", k, "number of neighbours per query")->check(positive())->capture_default_str();
  app.add_option("--metric", metric, "squared_l2, l2, inner_product, cosine, l1, linf or lp")
      ->check(name_check([](const std::string& s) { parse_metric(s); }, "METRIC"))
      ->capture_default_str();
  app.add_option("-p,--p", p, "exponent of --metric lp (> 0)")->check(positive())->capture_default_str();
  app.add_option("--backend", backend, "auto, cpu or cuda")
      ->check(name_check([](const std::string& s) { parse_backend(s); }, "BACKEND"))
      ->capture_default_str();
  app.add_option("--distance", distance, "distance algorithm (see `gknn info`)")
      ->check(name_check([](const std::string& s) { parse_distance(s); }, "ALGORITHM"))
      ->capture_default_str();
  app.add_option("--select", select, "selection algorithm, e.g. heap or merge_queue+aligned+buffered+hp")
      ->check(name_check([](const std::string& s) { parse_select(s); }, "ALGORITHM"))
      ->capture_default_str();
  // Bounded here because OpenMP cannot create arbitrarily many threads (tens of thousands crash the runtime).
  app.add_option("--threads", threads, "CPU threads (0: all)")->check(CLI::Range(0, 4096))->capture_default_str();
  app.add_option("--guard", guard,
                 "exactness guard: auto (re-rank float data's float32/TF32 keys on float64 distances), always or off")
      ->check(name_check([](const std::string& s) { parse_guard(s); }, "GUARD"))
      ->capture_default_str();
  app.add_option("--memory-budget", memory_budget, "working memory in bytes, e.g. 512M or 2G (default: automatic)")
      ->check(name_check([](const std::string& s) { parse_bytes(s); }, "SIZE"));
  app.add_option("--tang-m", tang_m, "level size m of merge_queue (a power of two, 1..512)")->capture_default_str();
  app.add_option("--tang-group", tang_group, "group size G of the hierarchical partition (+hp), 2..1024")
      ->capture_default_str();
  app.add_option("--thread-queue", thread_queue, "thread-queue length of warp_select / block_select (0: tuned default)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_flag("--no-prefetch", no_prefetch, "bits: no L2 prefetch of the row ahead of the loads");
  app.add_flag("--single-stage", single_stage,
               "sample_select / radix_select: move labels with the keys in every pass (default: two-stage)");
  app.add_flag("--no-bracket", no_bracket,
               "sample_select / radix_select: skip gknn's sampled bracket pass (the thesis' passes alone)");
}

SearchParams SearchOptions::params() const {
  SearchParams params;
  params.k = k;
  params.metric = parse_metric(metric);
  params.p = p;
  params.backend = parse_backend(backend);
  params.distance = parse_distance(distance);
  params.select_options.tang.m = tang_m;
  params.select_options.tang.group = tang_group;
  params.select = parse_select(select, &params.select_options.tang);
  params.select_options.overrides.thread_queue = thread_queue;
  params.select_options.prefetch = !no_prefetch;
  params.select_options.two_stage = !single_stage;
  params.select_options.sampled_bracket = !no_bracket;
  params.threads = threads;
  params.memory_budget = memory_budget.empty() ? 0 : parse_bytes(memory_budget);
  params.guard = parse_guard(guard);
  return params;
}

Dataset load_dataset(const SearchOptions& options) {
  Stopwatch clock;
  Dataset data;
  data.base = with_option("--base", [&] { return load_matrix(options.base); });
  data.queries = with_option("--query", [&] { return load_matrix(options.query); });
  data.load_seconds = clock.seconds();
  GKNN_EXPECT(data.base.rows > 0, ErrorCode::InvalidArgument, "--base: '", options.base, "' has no vectors");
  GKNN_EXPECT(data.base.cols == data.queries.cols, ErrorCode::InvalidArgument, "dimension mismatch: --base '",
              options.base, "' has dimension ", data.base.cols, " but --query '", options.query, "' has dimension ",
              data.queries.cols);
  return data;
}

Result run_search(const Dataset& data, const SearchOptions& options, const SearchParams& params) {
  return naming_inputs(options, [&] { return search(data.base.view(), data.queries.view(), params); });
}

std::string backend_description(const SearchParams& params) {
  const BackendChoice choice = choose_backend(params);
  return to_string(choice.backend) + " (" + choice.reason + ")";
}

}  // namespace gknn::cli
