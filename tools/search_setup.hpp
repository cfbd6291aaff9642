// search_setup.hpp: the options `search` and `bench` share, loading their inputs, and running one search with
// error messages that name the input files.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "gknn/types.hpp"

namespace gknn::cli {

struct SearchOptions {
  std::string base;
  std::string query;
  int64_t k = 10;
  std::string metric = "squared_l2";
  double p = 2.0;
  std::string backend = "auto";
  std::string distance = "auto";
  std::string select = "auto";
  int threads = 0;
  std::string memory_budget;  ///< empty: automatic
  std::string guard = "auto";  ///< the exactness guard (Guard)
  int tang_m = TangOptions{}.m;          ///< merge-queue level size of Tang's queues
  int tang_group = TangOptions{}.group;  ///< hierarchical-partition group size G
  int thread_queue = 0;                  ///< warp_select / block_select thread-queue length; 0 = tuned default
  bool no_prefetch = false;              ///< bits: without the L2 prefetch
  bool single_stage = false;             ///< sample/radix select: single-stage variant
  bool no_bracket = false;               ///< sample/radix select: without the sampled bracket

  /// Registers --base, --query, -k, --metric, -p, --backend, --distance, --select, --threads, --guard, --memory-budget,
  /// --tang-m, --tang-group, --thread-queue, --no-prefetch, --single-stage, --no-bracket.
  /// Registers the options; `inputs_required` false leaves --base/--query optional (bench --sweep needs neither).
  void add_to(CLI::App& app, bool inputs_required = true);
  /// Names were validated by CLI11 already; this converts them (and the memory budget) to SearchParams.
  SearchParams params() const;
};

struct Dataset {
  HostMatrix<float> base;
  HostMatrix<float> queries;
  double load_seconds = 0;
};

/// Loads base and queries (any load_matrix format) and checks that their dimensions agree, naming both files.
Dataset load_dataset(const SearchOptions& options);

/// Runs `work` with the input file names added to any gknn::Error (the library only knows "base" and "queries").
template <class Work>
auto naming_inputs(const SearchOptions& options, Work&& work) -> decltype(work()) {
  try {
    return work();
  } catch (const Error& e) {
    throw Error(e.code(), std::string(e.what()) + " (base: '" + options.base + "', queries: '" + options.query + "')");
  }
}

/// gknn::search with the input file names added to any error.
Result run_search(const Dataset& data, const SearchOptions& options, const SearchParams& params);

/// The backend `params` run on, with the reason: "cpu (auto: heap has no CUDA implementation)", "cuda (requested)".
std::string backend_description(const SearchParams& params);

}  // namespace gknn::cli
