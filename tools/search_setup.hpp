// search_setup.hpp: the options `search` and `bench` share, loading their inputs, and running one search with
// error messages that name the input files.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

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
  int tang_m = TangOptions{}.m;          ///< merge-queue level size of Tang's queues
  int tang_group = TangOptions{}.group;  ///< hierarchical-partition group size G
  int thread_queue = 0;                  ///< warp_select / block_select thread-queue length; 0 = tuned default
  bool no_prefetch = false;              ///< bits: without the L2 prefetch
  bool single_stage = false;             ///< sample/radix select: single-stage variant
  bool no_bracket = false;               ///< sample/radix select: without the sampled bracket

  /// Registers --base, --query, -k, --metric, -p, --backend, --distance, --select, --threads, --memory-budget,
  /// --tang-m, --tang-group, --thread-queue, --no-prefetch, --single-stage, --no-bracket.
  void add_to(CLI::App& app);
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

/// gknn::search with the input file names added to any error (the library only knows "base" and "queries").
Result run_search(const Dataset& data, const SearchOptions& options, const SearchParams& params);

/// The backend Auto resolves to in this process ("cpu" or "cuda").
std::string effective_backend(Backend requested);

}  // namespace gknn::cli
