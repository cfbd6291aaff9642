// bench_suite.hpp: `gknn bench --suite`: issue 13's benchmark suite (docs/planner.md) from the command line. It runs
// the source tree's bench/suite/run.sh with this executable's build: gknn's sweep over the suite's grid (Auto and
// every distance/selection pair per cell), the torch peer on the same cells, then the CSV, Markdown table and heat
// maps, in slices that resume (each call measures what its budget allows; run it again until no cell is left).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace gknn::cli {

struct SuiteOptions {
  bool enabled = false;
  bool quick = false;         ///< --suite-quick: run.sh --quick (a subset of the grid)
  bool recheck_auto = false;  ///< --suite-recheck-auto: run.sh --recheck-auto (Auto beside each cell's best pair)
  std::string budget = "480";  ///< --suite-budget: seconds a call, or "none" (the whole grid at once)
  std::string dir = "suite";   ///< --suite-dir: where the CSVs, suite.md and the heat maps go (resumed from there)

  /// Registers --suite and its options; `sweep` (the --sweep flag) and --suite exclude each other.
  void add_to(CLI::App& app, CLI::Option* sweep);
};

/// Replaces this process with run.sh (its exit code is the command's); `backend` "cpu" runs the sweep on the CPU
/// (SUITE_BACKEND=cpu), anything else on CUDA. Throws InvalidArgument when the source tree or the build is not where
/// this executable was built from.
int run_suite(const SuiteOptions& suite, const std::string& backend);

}  // namespace gknn::cli
