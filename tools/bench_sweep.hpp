// bench_sweep.hpp: `gknn bench --sweep`: measures every distance and selection algorithm of a backend on a grid of
// (n, q, d, k) cells and writes the fastest pair of each cell as rows of the measured plan table that Auto consults
// (gknn::plan_table_row, docs/planner.md), with Auto's own time beside it.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gknn/search.hpp"

namespace gknn::cli {

struct SweepOptions {
  bool enabled = false;
  std::string out;  ///< plan table rows go here (header written when the file is new); empty: stdout only
  std::string csv;  ///< every timing of the sweep, long format (bench/suite/report.py reads it); empty: none
  bool resume = false;  ///< keep the complete cells of `csv` (and of `out`) and measure only the others
  double budget_s = std::numeric_limits<double>::infinity();  ///< no cell starts that would end past it
  double cap = 4;  ///< a candidate whose first call exceeds cap x the cell's best so far is not repeated
  /// A candidate capped in a smaller neighbour cell is skipped as hopeless (--sweep-no-prune: false, timed anyway).
  bool prune = true;
  /// ... when it lost there by at least this factor to the cell's fastest pair (--sweep-hopeless; see
  /// kHopelessLoss in bench_sweep.cpp for why it is not the cap).
  double hopeless_loss = 16;
  /// A pair whose warm-up call takes at least this long (ms) is timed once after it (--sweep-long-call-ms;
  /// timed_once in bench_sweep.cpp).
  double long_call_ms = 500;
  /// Only Auto is timed in each cell (--sweep-auto-only): a cheap re-check of today's Auto against the best pairs a
  /// full sweep recorded earlier (bench/suite/report.py --auto-from); no plan table rows (no best pair is measured).
  bool auto_only = false;
  /// With auto_only: a full sweep's CSV (--sweep-best-from); in each cell it completed, Auto and its fastest pair are
  /// timed again side by side (CellBench::duel), both lines written; cells it lacks are left out.
  std::string best_from;
  /// With best_from: only the cells where Auto there took more than this factor times the cell's fastest pair
  /// (--sweep-recheck-above; 0: every cell), so that a re-check in slices takes the suspect cells first.
  double recheck_above = 0;
  std::vector<int64_t> n{16384, 262144, 1048576};
  std::vector<int64_t> q{1, 64, 1024, 10000};
  std::vector<int64_t> d{8, 32, 128};
  std::vector<int64_t> k{1, 10, 100, 1000};
  std::vector<std::string> metrics{"squared_l2", "l1"};
  std::vector<std::string> data{"integer", "float"};

  /// Registers --sweep, --out, --csv, --resume, --sweep-budget, --sweep-cap, --sweep-no-prune, --sweep-hopeless,
  /// --sweep-long-call-ms, --sweep-auto-only, --sweep-best-from, --sweep-recheck-above and the --sweep-* grid options.
  void add_to(CLI::App& app);
};

/// Runs the sweep on the backend params choose (params.device for CUDA) with `warmup` untimed and at least `repeat`
/// timed searches per candidate (median; more while they sum to under 25 ms, at most 51; one after a warm-up call of
/// `long_call_ms` or more; a candidate whose first call already takes `cap` times the cell's best so far is
/// not repeated and is flagged `capped`; unless `prune` is off, one capped in a smaller neighbour cell, where it lost
/// by `hopeless_loss` or more, is not called at all but recorded as skipped); prints one line per cell (best pair, its time, Auto's time and the ratio)
/// and the worst Auto/best ratio; after every cell rewrites the plan table (--out: a re-measured cell replaces its
/// row) and the timings (--csv). With `resume`, the complete cells of the CSV are kept and skipped; with a budget,
/// no cell starts whose forecast would end past it, and the end says how many cells are left and the command that
/// goes on. Returns 0.
int run_sweep(const SweepOptions& sweep, const SearchParams& params, int warmup, int repeat);

}  // namespace gknn::cli
