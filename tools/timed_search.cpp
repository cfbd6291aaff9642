#include "timed_search.hpp"

#include <cstdio>

#include "cli_common.hpp"
#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"

namespace gknn::cli {

double SearchTimings::search_ms() const {
  if (!has_warm()) return cold_ms;
  return search_is_device_time() ? median_phase(&SearchStats::device_ms) : median(warm_wall_ms);
}

bool SearchTimings::search_is_device_time() const {
  // A guarded search re-ranks on the host after its device pass: only the wall time covers it.
  return has_warm() && median_phase(&SearchStats::device_ms) > 0 && warm.front().guard_candidates == 0;
}

double SearchTimings::median_phase(double SearchStats::*phase) const {
  if (!has_warm()) return cold.*phase;
  std::vector<double> values;
  for (const SearchStats& s : warm) values.push_back(s.*phase);
  return median(values);
}

SearchTimings timed_search(const Dataset& data, const SearchOptions& options, const SearchParams& params, int repeat) {
  SearchTimings t;
  t.backend = choose_backend(params);
  const double ms_per_s = 1000.0;
  Stopwatch init_clock;
  Index index(data.base.cols, params.metric, t.backend.backend);
  t.init_ms = init_clock.seconds() * ms_per_s;
  if (params.metric == Metric::Lp) index.set_p(params.p);

  naming_inputs(options, [&] {
    Stopwatch upload_clock;
    try {
      index.add(data.base.view());
    } catch (const Error& e) {
      // A base the device cannot hold: every search streams it from the host in tiles (gknn::search does).
      if (e.code() != ErrorCode::OutOfMemory) throw;
      index.reset();
      t.streamed = true;
    }
    t.upload_ms = upload_clock.seconds() * ms_per_s;
    auto run = [&](const SearchParams& p) {
      return t.streamed ? search(data.base.view(), data.queries.view(), p) : index.search(data.queries.view(), p);
    };

    SearchParams p = params;
    p.stats = &t.cold;
    Stopwatch cold_clock;
    t.result = run(p);
    t.cold_ms = cold_clock.seconds() * ms_per_s;

    p.progress = nullptr;  // the bar covers the first search only
    t.warm.resize(static_cast<size_t>(repeat));
    for (SearchStats& stats : t.warm) {
      p.stats = &stats;
      Stopwatch clock;
      run(p);
      t.warm_wall_ms.push_back(clock.seconds() * ms_per_s);
    }
  });
  return t;
}

void print_timings(const SearchTimings& t, const Dataset& data) {
  const bool cuda = t.backend.backend == Backend::Cuda;
  const long long rows = static_cast<long long>(data.base.rows), cols = static_cast<long long>(data.base.cols);
  std::printf("init         %10.3f ms  %s\n", t.init_ms,
              cuda ? "device initialisation (CUDA context, index creation)"
                   : "index creation (the CPU backend needs no device initialisation)");
  if (t.streamed)
    std::printf("upload       %10.3f ms  base %lld x %lld does not fit on the device: every search streams it from "
                "the host in tiles\n", t.upload_ms, rows, cols);
  else if (cuda)
    std::printf("upload       %10.3f ms  base %lld x %lld to the device, once (it stays resident); queries: %.3f ms per "
                "search\n", t.upload_ms, rows, cols, t.median_phase(&SearchStats::upload_ms));
  else
    std::printf("upload       %10.3f ms  base %lld x %lld copied into the index, once (host memory)\n", t.upload_ms,
                rows, cols);
  std::printf("search cold  %10.3f ms  first search, wall time (one-time set-up included)\n", t.cold_ms);
  if (t.has_warm()) {
    std::printf("search warm  %10.3f ms  median of %zu warm searches, %s\n", t.search_ms(), t.warm.size(),
                t.search_is_device_time() ? "device time (CUDA events, queries' upload to results' download)"
                                          : "wall time");
    if (t.search_is_device_time())
      std::printf("  wall       %10.3f ms  median wall time of a warm search call (host work included)\n",
                  median(t.warm_wall_ms));
  }
  const double distance = t.median_phase(&SearchStats::distance_ms), select = t.median_phase(&SearchStats::select_ms),
               merge = t.median_phase(&SearchStats::merge_ms);
  if (distance > 0 || select > 0)
    std::printf("  phases     distances %.3f ms, selection %.3f ms, merge %.3f ms (device time; streams overlap)\n",
                distance, select, merge);
  if (const SearchStats& r = t.has_warm() ? t.warm.front() : t.cold; r.distance_algorithm != DistanceAlgorithm::Auto)
    std::printf("  ran        distance %s, selection %s\n", to_string(r.distance_algorithm).c_str(),
                r.select_algorithm == SelectAlgorithm::Auto ? "none (the distance kept each query's top k)"
                                                            : to_string(r.select_algorithm).c_str());
  if (const SearchStats& g = t.has_warm() ? t.warm.front() : t.cold; g.guard_candidates > 0)
    std::printf("  guard      k' = %lld candidates per query re-ranked on float64 keys: %.3f ms after the first pass "
                "(median), %lld queries searched again (float data: the float64 oracle's neighbours; --guard off "
                "skips it)\n",
                static_cast<long long>(g.guard_candidates), t.median_phase(&SearchStats::rerank_ms),
                static_cast<long long>(g.guard_retried));
  if (t.has_warm() && t.search_is_device_time())
    std::printf("  host       checks %.3f ms, set-up %.3f ms (host work before the device starts)\n",
                t.median_phase(&SearchStats::check_ms), t.median_phase(&SearchStats::setup_ms));
  if (cuda)
    std::printf("download     %10.3f ms  results to the host, per search (part of the search time)\n",
                t.median_phase(&SearchStats::download_ms));
  else
    std::printf("download     %10.3f ms  none: the CPU backend writes the results in host memory\n", 0.0);
  const double seconds = t.search_ms() / 1000.0;
  std::printf("throughput   %10.1f queries/s  (%s search)\n",
              seconds > 0 ? static_cast<double>(data.queries.rows) / seconds : 0.0, t.has_warm() ? "warm" : "cold");
  std::fflush(stdout);
}

}  // namespace gknn::cli
