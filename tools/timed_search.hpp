// timed_search.hpp: a search timed the way `gknn search` reports it, phase by phase: device initialisation (creating
// the gknn::Index), the upload of the base (Index::add: it then stays resident), a first (cold) search, and
// `repeat` warm searches whose median is the search time. The GPU phases come from SearchStats (CUDA events).
#pragma once

#include <vector>

#include "gknn/search.hpp"
#include "gknn/types.hpp"
#include "search_setup.hpp"

namespace gknn::cli {

struct SearchTimings {
  BackendChoice backend;
  double init_ms = 0;    ///< gknn::Index construction: on CUDA the context and device set-up
  double upload_ms = 0;  ///< Index::add of the base: to the device on CUDA, into the index's host copy on the CPU
  bool streamed = false; ///< the base did not fit on the device: each search streamed it (gknn::search)
  double cold_ms = 0;    ///< wall time of the first search (one-time set-up included)
  SearchStats cold;      ///< phases of the first search
  std::vector<double> warm_wall_ms;     ///< wall time of each warm search
  std::vector<SearchStats> warm;        ///< phases of each warm search
  Result result;                        ///< of the first search (every search returns the same)

  bool has_warm() const { return !warm.empty(); }
  /// The search figure: median device time of the warm searches where the backend measures one (CUDA events,
  /// from the queries' upload to the results' download), else their median wall time; the cold wall time when
  /// no warm search was run.
  double search_ms() const;
  bool search_is_device_time() const;
  /// Median of one phase over the warm searches (the cold one when there is none).
  double median_phase(double SearchStats::*phase) const;
};

/// Runs the search of `data` with `params` on the backend choose_backend picks: one cold search (with `params`'s
/// progress callback) and `repeat` warm ones. Errors name the input files.
SearchTimings timed_search(const Dataset& data, const SearchOptions& options, const SearchParams& params, int repeat);

/// The timing lines of `gknn search` (init, upload, search cold/warm, phases, download, throughput).
void print_timings(const SearchTimings& t, const Dataset& data);

}  // namespace gknn::cli
