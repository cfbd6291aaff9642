// bench_gpu.cpp: the seeds' GPU kNN on the seeds' shapes — every (distance, selection) pair, timed per stage.
//
// Configurations: Garcia's (16384 references, 4096 queries, d=128, k=16) and the report's SIFT shapes
// (10k x 128 with 100 queries, k=100; 1M x 128 with 10k queries, k=100). Data are uniform integers 0..255
// (SIFT's value range): every float32 sum is then exact, so every pair must return identical neighbours, and
// the benchmark checks that against the first pair it ran (column "same").
//
// Per pair: one warm-up search, then up to --repeats timed searches (fewer when one takes longer than
// --long-run seconds; at least 51 when one takes under 5 ms, whose host share is otherwise noise); the median wall time is reported with the per-stage device times of the median run
// (CUDA events, hooks.hpp). Pairs whose time, extrapolated from the smaller Garcia shape by the pair count
// nq*nb, would exceed --time-limit seconds are reported as skipped. Bandwidth columns relate the traffic each
// stage must at least move to a device-to-device copy measured in the same run:
//   distance: writes nq*nb keys + reads the queries and, per query tile, the base rows
//   select:   reads nq*nb keys
// The database is resident (gknn::Index), so base upload is reported once per configuration, not per search.
// Host share: the part of the wall time that is not device time (first upload to last download on the device,
// CUDA events): validation, copying results into the caller's arrays, call overhead. Host work inside the device
// span has columns of its own (SearchStats): 'pack ms', the query tiles packed into pinned slots before their
// copies, and 'copy-out ms', the finalised tiles copied from pinned slots into the Result after their downloads.
// The wall time is that of the search call, which allocates the new Result; freeing the previous run's Result is left
// out of it.
// The calls_q* configurations time many small searches (1,000 calls of q = 1, 16, 128 queries against the 1M base;
// calls_q1_n32k / _n128k against smaller bases) and report the per-call overhead beyond device time, for Auto, Auto
// without the Index's kept operand copy (hooks.hpp: the per-search conversion, as before that copy), Auto with the
// fused kernel's splits' lists left to the pipeline's selection (hooks.hpp: as before the kernel merged them) and
// each exact GEMM-form distance forced (--filter selects them as 'distance/auto', the second and third as
// 'auto-nokeep/auto' and 'auto-nomerge/auto'; the other configurations also run 'auto-nomerge'), then Auto's own
// pair forced ('naive/bits'), and Auto and that pair again with their calls taking turns ('auto~alt/auto',
// 'naive~alt/bits'), as the suite's duel runs them; calls_q1_n16k_d8* and calls_q1_n1m_d8_float are suite cells
// where Auto came out 6-25 us slower than its own pair forced.
// The *_l1 / *_linf configurations search the same integer data under L1 / Linf (every kernel that serves the metric;
// time estimates from the garcia_* configuration of the same metric). Every configuration ends with the first
// guarded pair checked against the CPU's float64 reference on 100 sampled queries.
// The *_float configurations use uniform [0, 1) floats. Auto also runs with the queries cut into 2 and 4 tiles
// (hooks.hpp: a forced query tile; 'auto-qtiles2/...', 'auto-qtiles4/...'): the pipeline packs and uploads tile i + 1
// while tile i computes, which is what a planner rule for uploads serial with the kernel (Garcia's shape: ~0.2 of its
// 0.53 ms, bench/results/gpu_bench_2026-11-25_fused.md) would choose; measured before the planner does it.
// Issue 12's reporting: the run first measures the arithmetic ceilings (cuBLAS GEMMs in fp32, TF32, fp16 and int8,
// an FMA kernel: ceilings.cu) and prints them ("Ceilings (measured)"); every measured row's distance stage is then
// set against the ceiling of its path's unit and the copy bandwidth (the model: ceilings.hpp) in a CSV (--csv,
// default --out with .csv), one row per (config, distance, selection): floor ms = max(work / ceiling, bytes /
// bandwidth) and the measured fraction of each. bench/gpu/plot_distance.py draws it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "ceilings.hpp"
#include "cuda/hooks.hpp"
#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"

namespace {

using namespace gknn;
using Clock = std::chrono::steady_clock;

struct Config {
  std::string name;
  int64_t nb, nq, dim, k;
  int calls = 0;             ///< > 0: the many-small-calls measurement, this many calls
  bool float_data = false;   ///< uniform [0, 1) floats instead of integers 0..255
  Metric metric = Metric::SquaredL2;
  /// Garcia-shaped: its times estimate the larger configurations' of the same metric (--time-limit).
  bool small() const { return name.rfind("garcia", 0) == 0; }
};

struct Options {
  std::vector<std::string> configs{"garcia", "sift10k", "sift1m"};
  int repeats = 5;
  double time_limit_s = 30;
  double long_run_s = 3;
  std::string filter = ".*";
  bool all_selections = false;
  std::string out = "gpu_bench.md";
  std::string csv;              ///< empty: out with its .md replaced by .csv
  int64_t ceiling_gemm_n = 8192;  ///< m = n = k of the ceilings' GEMMs
};

const std::map<std::string, Config> kConfigs{
    {"garcia", {"garcia", 16384, 4096, 128, 16}},
    {"sift10k", {"sift10k", 10000, 100, 128, 100}},
    {"sift1m", {"sift1m", 1000000, 10000, 128, 100}},
    {"sift1m_k1000", {"sift1m_k1000", 1000000, 10000, 128, 1000}},
    {"sift1m_k2048", {"sift1m_k2048", 1000000, 10000, 128, 2048}},
    {"sift1m_k16384", {"sift1m_k16384", 1000000, 10000, 128, 16384}},
    {"sift1m_float", {"sift1m_float", 1000000, 10000, 128, 100, 0, true}},
    // Issue 12's L1 / Linf target (1M x 128, 10k queries, k = 100): every kernel of the metric side by side.
    {"garcia_l1", {"garcia_l1", 16384, 4096, 128, 16, 0, false, Metric::L1}},
    {"sift1m_l1", {"sift1m_l1", 1000000, 10000, 128, 100, 0, false, Metric::L1}},
    {"garcia_linf", {"garcia_linf", 16384, 4096, 128, 16, 0, false, Metric::Linf}},
    {"sift1m_linf", {"sift1m_linf", 1000000, 10000, 128, 100, 0, false, Metric::Linf}},
    {"calls_q1", {"calls_q1", 1000000, 1, 128, 100, 1000}},
    {"calls_q16", {"calls_q16", 1000000, 16, 128, 100, 1000}},
    {"calls_q128", {"calls_q128", 1000000, 128, 128, 100, 1000}},
    {"calls_q1_n32k", {"calls_q1_n32k", 32768, 1, 128, 100, 1000}},
    {"calls_q1_n128k", {"calls_q1_n128k", 131072, 1, 128, 100, 1000}},
    // The suite's integer d = 960 cells (n = 16384, 10k queries): fp16 does not hold their sums exactly, so cuBLAS
    // or TF32 keys go through the guard, whose certificate (float64 keys of every candidate) grows with k' x d:
    // H200 Auto 26 ms at k = 100 and 105 ms at k = 1000, torch 9.8 ms (bench/results/suite_2026-11-27_h200/).
    {"d960", {"d960", 16384, 10000, 960, 100}},
    {"d960_k1000", {"d960_k1000", 16384, 10000, 960, 1000}},
    // The same cell on float data, where every key goes through the certificate (no exact integer keys): the suite's
    // float d = 960, k = 1000 cells, where gknn trails torch most (to profile the certificate kernel).
    {"d960_k1000_float", {"d960_k1000_float", 16384, 10000, 960, 1000, 0, true}},
    // Suite cells where Auto, taking the very pair a forced call takes, came out 6-25 us slower (integer / float,
    // bench/results/suite_2026-11-27_h200/suite.md): Auto against its own pair forced, in turn and alternating.
    {"calls_q1_n16k_d8", {"calls_q1_n16k_d8", 16384, 1, 8, 10, 1000}},
    {"calls_q1_n16k_d8_float", {"calls_q1_n16k_d8_float", 16384, 1, 8, 10, 1000, true}},
    {"calls_q1_n1m_d8_float", {"calls_q1_n1m_d8_float", 1048576, 1, 8, 10, 1000, true}},
};

std::vector<float> uniform_floats(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
  for (float& f : v) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    f = static_cast<float>((x * 0x2545F4914F6CDD1Dull) >> 40) * 0x1p-24f;
  }
  return v;
}

std::vector<float> uniform_integers(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& f : v) {  // xorshift64*: fast enough for 128M values
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    f = static_cast<float>(((x * 0x2545F4914F6CDD1Dull) >> 56) & 0xFF);
  }
  return v;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Device-to-device copy bandwidth, GB/s counting bytes read + written.
double copy_bandwidth_gbs() {
  const size_t bytes = size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return 0;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);  // warm-up
  float best_ms = 1e30f;
  for (int i = 0; i < 5; ++i) {
    cudaEventRecord(start);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * double(bytes) / (best_ms * 1e-3) / 1e9;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct Sample {
  double wall_s;
  detail::cuda::StageTimes stages;
  double check_ms = 0;  ///< SearchStats::check_ms of a run with stats (host argument checks)
};

struct Row {
  std::string config, distance, select, status;
  Sample median{};
  int runs = 0;
  double queries_per_s = 0, distance_pct = 0, select_pct = 0;
  int64_t guard_candidates = 0, guard_retried = 0;  ///< k' of the guard's first pass (0: not guarded), queries retried
  double rerank_ms = 0;                              ///< the guard's work after its first pass (retries included)
  bool same = true;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value after %s\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--configs") {
      o.configs.clear();
      std::string list = value();
      for (size_t p = 0; p <= list.size();) {
        const size_t q = std::min(list.find(',', p), list.size());
        if (q > p) o.configs.push_back(list.substr(p, q - p));
        p = q + 1;
      }
    } else if (a == "--repeats") o.repeats = std::max(1, std::atoi(value().c_str()));
    else if (a == "--time-limit") o.time_limit_s = std::atof(value().c_str());
    else if (a == "--long-run") o.long_run_s = std::atof(value().c_str());
    else if (a == "--filter") o.filter = value();
    else if (a == "--all-selections") o.all_selections = true;
    else if (a == "--out") o.out = value();
    else if (a == "--csv") o.csv = value();
    else if (a == "--ceiling-gemm") o.ceiling_gemm_n = std::max<int64_t>(256, std::atoll(value().c_str()) / 4 * 4);
    else {
      std::printf(
          "gknn_gpu_bench [--configs garcia,sift10k,sift1m] [--repeats N] [--time-limit S] [--long-run S]\n"
          "               [--filter REGEX on 'distance/selection'] [--all-selections] [--out FILE.md]\n"
          "               [--csv FILE.csv (default: --out with .csv)] [--ceiling-gemm N (GEMM m = n = k, 8192)]\n");
      std::exit(a == "--help" ? 0 : 2);
    }
  }
  if (o.csv.empty()) {
    const size_t dot = o.out.rfind('.'), slash = o.out.rfind('/');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    o.csv = (has_ext ? o.out.substr(0, dot) : o.out) + ".csv";
  }
  return o;
}

std::vector<SelectAlgorithm> selections(const Options& o, int64_t k) {
  std::vector<SelectAlgorithm> out{SelectAlgorithm::Auto};
  for (const SelectCapability& s : select_algorithms(Backend::Cuda)) {
    const bool mine = s.algorithm == SelectAlgorithm::Insertion || s.algorithm == SelectAlgorithm::Sort;
    if ((mine || o.all_selections) && k <= s.max_k) out.push_back(s.algorithm);
  }
  return out;
}

/// The first guarded pair's result against the float64 oracle (the CPU backend's `reference` path: float64 sums,
/// ties by index) on 100 queries spread over the set: a note line, and whether every id and value agreed.
std::pair<std::string, bool> sampled_oracle_check(const std::vector<float>& base, const std::vector<float>& queries,
                                                  const Config& c, const Result& got) {
  const int64_t samples = std::min<int64_t>(c.nq, 100), step = c.nq / samples;
  std::vector<float> picked;
  for (int64_t i = 0; i < samples; ++i)
    picked.insert(picked.end(), queries.begin() + i * step * c.dim, queries.begin() + (i * step + 1) * c.dim);
  SearchParams p;
  p.k = c.k;
  p.metric = c.metric;
  p.backend = Backend::Cpu;
  p.distance = DistanceAlgorithm::Reference;
  const Clock::time_point t0 = Clock::now();
  const Result want = search(FloatView{base.data(), c.nb, c.dim, 0}, FloatView{picked.data(), samples, c.dim, 0}, p);
  int64_t agree = 0;
  for (int64_t i = 0; i < samples; ++i) {
    bool same = true;
    for (int64_t j = 0; j < c.k; ++j)
      same = same && want.index(i, j) == got.index(i * step, j) && want.distance(i, j) == got.distance(i * step, j);
    agree += same;
  }
  return {"- float64 oracle (" + c.name + "): " + std::to_string(agree) + " of " + std::to_string(samples) +
              " sampled queries (one in " + std::to_string(step) + ") with its ids and values, first guarded pair (" +
              fmt("%.1f", seconds_since(t0)) + " s on the CPU)",
          agree == samples};
}

Sample run_once(const Index& index, const std::vector<float>& queries, const Config& c, const SearchParams& p,
                Result* result) {
  const Clock::time_point t0 = Clock::now();
  Result r = index.search(FloatView{queries.data(), c.nq, c.dim, 0}, p);
  const double wall_s = seconds_since(t0);
  *result = std::move(r);  // the previous run's result is freed outside the timed call (the caller's business)
  detail::cuda::StageTimes t = detail::cuda::last_stage_times();
  if (p.stats && p.stats->guard_candidates > 0) {  // guarded: the first pass's stages (a retry published its own)
    const SearchStats& s = *p.stats;
    t.upload_ms = s.upload_ms, t.distance_ms = s.distance_ms, t.select_ms = s.select_ms, t.merge_ms = s.merge_ms;
    t.download_ms = s.download_ms, t.finalize_ms = s.finalize_ms, t.device_ms = s.device_ms, t.setup_ms = s.setup_ms;
    t.pack_ms = s.pack_ms, t.copy_out_ms = s.copy_out_ms;
    t.query_tiles = s.query_tiles, t.base_tiles = s.base_tiles;
  }
  return {wall_s, t, p.stats ? p.stats->check_ms : 0.0};
}

/// A calls_* variant: a distance and a selection, whether the Index keeps its operand copy and whether the fused
/// kernel merges the splits' lists (hooks.hpp); `alternating`: its calls take turns with another variant's (the
/// suite's duel does so), each of which re-plans the search (Pipeline::prepare_for's key holds the request).
struct CallVariant {
  DistanceAlgorithm distance;
  bool keep = true, merge = true;
  SelectAlgorithm select = SelectAlgorithm::Auto;
  bool alternating = false;
  std::string name() const {
    return to_string(distance) + (keep ? "" : "-nokeep") + (merge ? "" : "-nomerge") + (alternating ? "~alt" : "");
  }
  std::string pair() const { return name() + "/" + to_string(select); }
  SearchParams params(const Config& c) const {
    SearchParams p;
    p.k = c.k;
    p.backend = Backend::Cuda;
    p.distance = distance;
    p.select = select;
    return p;
  }
};

/// What the CSV takes from a calls_* measurement (medians, ms).
struct CallNumbers {
  double wall_ms = 0, distance_ms = 0, select_ms = 0;
  int64_t query_tiles = 0;
};

/// Many small searches: median wall per call over `calls` calls without timing events, and the device time of
/// one call (events on); the difference is the per-call overhead beyond device time.
/// `partner`: the variant whose calls take turns with v's (v.alternating), untimed.
std::string measure_calls(const Index& index, const std::vector<float>& queries, const Config& c,
                          const CallVariant& v, const CallVariant* partner, std::vector<int64_t>* ids_out,
                          CallNumbers* numbers) {
  SearchParams p = v.params(c);
  const SearchParams other = partner ? partner->params(c) : p;
  detail::cuda::set_operand_cache_enabled(v.keep);
  detail::cuda::set_fused_split_merge_enabled(v.merge);
  const FloatView q{queries.data(), c.nq, c.dim, 0};
  std::vector<float> d(static_cast<size_t>(c.nq * c.k));
  std::vector<int64_t> ids(d.size());
  const ResultView out{d.data(), ids.data(), c.nq, c.k};
  std::vector<float> other_d(d.size());
  std::vector<int64_t> other_ids(d.size());
  const ResultView other_out{other_d.data(), other_ids.data(), c.nq, c.k};
  detail::cuda::set_stage_timing(false);
  for (int i = 0; i < 20; ++i) index.search(q, p, out);  // warm-up
  std::vector<double> wall;
  for (int i = 0; i < c.calls; ++i) {
    if (partner) index.search(q, other, other_out);
    const Clock::time_point t0 = Clock::now();
    index.search(q, p, out);
    wall.push_back(seconds_since(t0) * 1e3);
  }
  std::sort(wall.begin(), wall.end());
  SearchStats stats;
  p.stats = &stats;
  std::vector<double> device, check, setup, dist, sel, fin, copies, pack, copy_out;
  for (int i = 0; i < 50; ++i) {
    if (partner) index.search(q, other, other_out);
    index.search(q, p, out);
    device.push_back(stats.device_ms);
    check.push_back(stats.check_ms);
    setup.push_back(stats.setup_ms);
    dist.push_back(stats.distance_ms);
    sel.push_back(stats.select_ms);
    fin.push_back(stats.merge_ms + stats.finalize_ms);
    copies.push_back(stats.upload_ms + stats.download_ms);
    pack.push_back(stats.pack_ms);
    copy_out.push_back(stats.copy_out_ms);
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  detail::cuda::set_stage_timing(true);
  detail::cuda::set_operand_cache_enabled(true);
  detail::cuda::set_fused_split_merge_enabled(true);
  *ids_out = ids;
  const double w = wall[wall.size() / 2], dv = median(device);
  *numbers = {w, median(dist), median(sel), stats.query_tiles};
  // Columns as the table's; the bandwidth columns are left empty (the stages' per-call times are in 'ms').
  return "| " + c.name + " | " + v.name() + " | " + to_string(v.select) + " (" + std::to_string(c.calls) +
         " calls of q = " + std::to_string(c.nq) + (partner ? ", in turn with " + partner->pair() : "") + ") | " +
         fmt("%.4f", w) + " | " + fmt("%.4f", dv) + " | " + fmt("%.1f", 100 * (w - dv) / w) + " | " +
         fmt("%.4f", median(check)) + " | " + fmt("%.4f", median(setup)) + " | " +
         fmt("%.0f", double(c.nq) / (w * 1e-3)) + " | " + fmt("%.4f", median(dist)) + " | | " +
         fmt("%.4f", median(sel)) + " | | " + fmt("%.4f", median(fin)) + " | " + fmt("%.4f", median(copies)) + " | " +
         fmt("%.4f", median(pack)) + " | " + fmt("%.4f", median(copy_out)) + " | " + std::to_string(c.calls) + " |";
}

constexpr int kShortRuns = 51;

/// Warm-up + timed repeats of one pair. The wall times come from runs without timing events (events cost host
/// time); the stage and device times from as many runs with them, their median taken per stage.
Row measure(const Index& index, const std::vector<float>& queries, const Config& c, const SearchParams& p,
            const Options& o, Result* result) {
  Row row;
  std::vector<double> wall;
  std::vector<detail::cuda::StageTimes> stages;
  detail::cuda::set_stage_timing(false);
  // The first run of a configuration also makes what later runs reuse (buffers, an Index's kept fused operands:
  // Garcia's first search took > 5 ms and got 5 runs instead of 51), so a second one decides the repeats.
  const Sample first = run_once(index, queries, c, p, result);
  const Sample warm = first.wall_s > o.long_run_s ? first : run_once(index, queries, c, p, result);
  // Sub-5 ms searches (Garcia's shape: 0.6 ms) take at least 51 runs: their host share, wall minus device time
  // from two different sets of runs, swung by +-5 points between medians of 9 (6.5% and -1.9% in one session).
  const int repeats = warm.wall_s > o.long_run_s ? 0 : warm.wall_s < 5e-3 ? std::max(o.repeats, kShortRuns) : o.repeats;
  if (repeats == 0) wall.push_back(warm.wall_s);  // too slow to repeat: the first run is the measurement
  for (int i = 0; i < repeats; ++i) {
    wall.push_back(run_once(index, queries, c, p, result).wall_s);
    if (wall.back() > o.long_run_s) break;
  }
  detail::cuda::set_stage_timing(true);
  SearchStats stats;  // the host phases (check_ms) come with the runs that time the stages
  SearchParams timed = p;
  timed.stats = &stats;
  std::vector<double> checks;
  for (size_t i = 0; i < wall.size(); ++i) {
    const Sample s = run_once(index, queries, c, timed, result);
    stages.push_back(s.stages);
    checks.push_back(s.check_ms);
  }
  std::sort(checks.begin(), checks.end());
  auto median_of = [&](double detail::cuda::StageTimes::*field) {
    std::vector<double> v;
    for (const auto& t : stages) v.push_back(t.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::sort(wall.begin(), wall.end());
  row.median.wall_s = wall[wall.size() / 2];
  row.median.stages = stages.front();
  for (auto field : {&detail::cuda::StageTimes::upload_ms, &detail::cuda::StageTimes::distance_ms,
                     &detail::cuda::StageTimes::select_ms, &detail::cuda::StageTimes::merge_ms,
                     &detail::cuda::StageTimes::download_ms, &detail::cuda::StageTimes::finalize_ms,
                     &detail::cuda::StageTimes::device_ms, &detail::cuda::StageTimes::setup_ms,
                     &detail::cuda::StageTimes::pack_ms, &detail::cuda::StageTimes::copy_out_ms})
    row.median.stages.*field = median_of(field);
  row.median.check_ms = checks[checks.size() / 2];
  row.runs = static_cast<int>(wall.size());
  row.guard_candidates = stats.guard_candidates;  // the last timed run's (the guard's work repeats run for run)
  row.guard_retried = stats.guard_retried;
  row.rerank_ms = stats.rerank_ms;
  return row;
}

void fill_rates(Row& row, const Config& c, double copy_gbs) {
  const Sample& s = row.median;
  row.queries_per_s = double(c.nq) / s.wall_s;
  const double keys = double(c.nq) * double(c.nb) * 4;
  const double distance_bytes =
      keys + double(c.nq) * c.dim * 4 + double(std::max<int64_t>(1, s.stages.query_tiles)) * c.nb * c.dim * 4;
  if (s.stages.distance_ms > 0 && copy_gbs > 0)
    row.distance_pct = 100 * distance_bytes / (s.stages.distance_ms * 1e-3) / 1e9 / copy_gbs;
  if (s.stages.select_ms > 0 && copy_gbs > 0) row.select_pct = 100 * keys / (s.stages.select_ms * 1e-3) / 1e9 / copy_gbs;
}

std::string table_line(const Row& r) {
  if (!r.status.empty())
    return "| " + r.config + " | " + r.distance + " | " + r.select + " | " + r.status +
           " | | | | | | | | | | | | | | | | | | |";
  const detail::cuda::StageTimes& t = r.median.stages;
  const double wall_ms = r.median.wall_s * 1e3;
  return "| " + r.config + " | " + r.distance + " | " + r.select + " | " + fmt("%.2f", wall_ms) + " | " +
         fmt("%.2f", t.device_ms) + " | " + fmt("%.1f", 100 * (wall_ms - t.device_ms) / wall_ms) + " | " +
         fmt("%.3f", r.median.check_ms) + " | " + fmt("%.3f", t.setup_ms) + " | " +
         fmt("%.0f", r.queries_per_s) + " | " + fmt("%.2f", t.distance_ms) + " | " +
         fmt("%.1f", r.distance_pct) + " | " + fmt("%.2f", t.select_ms) + " | " + fmt("%.1f", r.select_pct) + " | " +
         fmt("%.2f", t.merge_ms + t.finalize_ms) + " | " + fmt("%.2f", t.upload_ms + t.download_ms) + " | " +
         fmt("%.3f", t.pack_ms) + " | " + fmt("%.3f", t.copy_out_ms) + " | " +
         (r.guard_candidates > 0 ? std::to_string(r.guard_candidates) + " | " + std::to_string(r.guard_retried) +
                                       " | " + fmt("%.2f", r.rerank_ms)
                                 : std::string("- | - | -")) +
         " | " + std::to_string(r.runs) + " | " + (r.same ? "yes" : "**NO**") + " |";
}

/// One row of the ceilings CSV (issue 12's reporting requirement; the model: ceilings.hpp).
struct CsvRow {
  std::string config, metric, dtype, distance, path, selection;
  int64_t nb = 0, nq = 0, dim = 0, k = 0;
  double wall_ms = 0, distance_ms = 0, select_ms = 0;
  gknn_bench::StageFloor floor;
};

constexpr const char* kCsvHeader =
    "config,nb,nq,dim,k,metric,dtype,distance,path,selection,unit,wall_ms,distance_ms,select_ms,arith_ops,"
    "min_bytes,arith_floor_ms,hbm_floor_ms,floor_ms,bound,arith_fraction,hbm_fraction";

std::string csv_line(const CsvRow& r) {
  const gknn_bench::StageFloor& f = r.floor;
  const auto g = [](double v) { return fmt("%.6g", v); };
  const auto opt = [&](double v) { return f.valid ? g(v) : std::string(); };  // empty where a ceiling is missing
  return r.config + "," + std::to_string(r.nb) + "," + std::to_string(r.nq) + "," + std::to_string(r.dim) + "," +
         std::to_string(r.k) + "," + r.metric + "," + r.dtype + "," + r.distance + "," + r.path + "," + r.selection +
         "," + gknn_bench::unit_name(f.unit) + "," + g(r.wall_ms) + "," + g(r.distance_ms) + "," + g(r.select_ms) +
         "," + g(f.ops) + "," + g(f.bytes) + "," + opt(f.arith_ms) + "," + opt(f.hbm_ms) + "," + opt(f.floor_ms) +
         "," + (f.valid ? f.bound() : "") + "," + opt(f.arith_fraction) + "," + opt(f.hbm_fraction);
}

CsvRow make_csv_row(const Config& c, const std::string& distance, DistanceAlgorithm path, const std::string& select,
                    double wall_ms, double distance_ms, double select_ms, int64_t query_tiles, bool kept_operands,
                    const gknn_bench::Ceilings& ceilings) {
  CsvRow r;
  r.config = c.name;
  r.nb = c.nb, r.nq = c.nq, r.dim = c.dim, r.k = c.k;
  r.metric = to_string(c.metric);
  r.dtype = c.float_data ? "float" : "uint8";
  r.distance = distance;
  r.path = to_string(path);
  r.selection = select;
  r.wall_ms = wall_ms, r.distance_ms = distance_ms, r.select_ms = select_ms;
  r.floor = gknn_bench::stage_floor(path, c.metric, {!c.float_data}, c.nq, c.nb, c.dim, c.k, query_tiles,
                                    kept_operands, distance_ms, ceilings);
  return r;
}

/// The "Ceilings (measured)" lines and the model's notes (stdout at the start, the Markdown file at the end).
std::vector<std::string> ceiling_lines(const gknn_bench::Ceilings& c) {
  const auto t = [](double v) { return v > 0 ? fmt("%.1f", v / 1e12) : std::string("not measured"); };
  const std::string n = std::to_string(c.gemm_n);
  std::vector<std::string> out{
      "## Ceilings (measured)",
      "",
      "- fp32 SGEMM (cuBLAS, pedantic math, " + n + "^3): " + t(c.sgemm) + " TFLOP/s",
      "- TF32 GEMM (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32, " + n + "^3): " + t(c.tf32) + " TFLOP/s",
      "- fp16 GEMM, fp32 accumulation (cublasGemmEx, " + n + "^3): " + t(c.fp16) + " TFLOP/s",
      "- int8 GEMM, int32 accumulation (cublasGemmEx, CUDA_R_8I -> CUDA_R_32I, " + n + "^3): " + t(c.int8) + " TOP/s",
      "- SIMT fp32: " + t(c.simt) + " T FMA instructions/s (" + t(2 * c.simt) + " TFLOP/s; an FMA-throughput kernel)",
      "- HBM: " + fmt("%.0f", c.copy_bytes_per_s / 1e9) + " GB/s (device-to-device copy, bytes read + written)",
  };
  if (!c.errors.empty()) out.push_back("- not measured: " + c.errors);
  out.push_back("");
  out.push_back(
      "Model of each distance stage (bench/gpu/ceilings.hpp): unit = the ceiling of the path's precision (cublas: "
      "fp32 SGEMM; tf32, tf32x3: TF32; fp16_mma: fp16; int8_mma: int8; fused: int8 on 8-bit data, fp16 beyond or "
      "where it falls back to fp16_mma's two-stage path; naive, shared_reduce, atomic, garcia_*, lp_gemm: SIMT fp32); "
      "work = 2 nq nb d flops on GEMM units (x3 for tf32x3; the folded norm columns not counted), nq nb d x "
      "instructions per component on SIMT (squared L2 2: subtract + FMA; inner product 1; L1 2: subtract + add |.|; "
      "Linf 2: subtract + max |.|; Lp 2, powf not counted; loads and atomics not counted); bytes = the nq x nb key "
      "matrix written once at 4 bytes a key (none for fused) + the float32 queries + the base once per query tile "
      "(float32 rows, which every GEMM path converts each call; fused reads the Index's kept 8-bit copy, 1 byte a "
      "component); floor = max(work / ceiling, bytes / HBM). Fractions: each term over the measured distance "
      "stage (fused: the whole kernel, selection included). Auto rows: the path explain_search resolves; the "
      "calls_* configurations' Auto rows with the Index's kept copy are left out (an Index may choose otherwise "
      "than a one-shot search).");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!backend_available(Backend::Cuda)) {
    std::printf("gknn_gpu_bench: SKIPPED: no CUDA device visible\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const double copy_gbs = copy_bandwidth_gbs();
  const gknn_bench::Ceilings ceilings = gknn_bench::measure_ceilings(o.ceiling_gemm_n, 10, copy_gbs * 1e9);
  const std::vector<std::string> ceiling_section = ceiling_lines(ceilings);
  for (const std::string& l : ceiling_section) std::printf("%s\n", l.c_str());
  std::printf("\n");
  std::vector<std::string> lines, notes;
  std::vector<CsvRow> csv_rows;
  lines.push_back("# gknn GPU benchmark: the seeds' kernels (device: " + std::string(prop.name) + ")");
  lines.push_back("");
  lines.push_back("Measured device-to-device copy bandwidth (read + write): " + fmt("%.0f", copy_gbs) + " GB/s. " +
                  "Times: median of up to " + std::to_string(o.repeats) + " runs (at least " +
                      std::to_string(kShortRuns) + " for searches under 5 ms) after a warm-up; wall from runs " +
                  "without timing events, stages and device ms (CUDA events) from as many runs with them; wall " +
                  "includes validation, query upload and result download into a new Result.");
  lines.push_back("");
  lines.push_back("| config | distance | selection | wall ms | device ms | host % | check ms | setup ms | queries/s | "
                  "distance ms | distance %bw | select ms | select %bw | merge+final ms | copies ms | pack ms | "
                  "copy-out ms | guard k' | retried | re-rank ms | runs | same |");
  lines.push_back("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const std::string& l : lines) std::printf("%s\n", l.c_str());
  std::fflush(stdout);

  const std::regex filter(o.filter);
  std::map<std::string, double> garcia_seconds;  // "distance/select" -> wall time on Garcia's shape
  const double garcia_pairs = 16384.0 * 4096.0;
  detail::cuda::set_stage_timing(true);
  int failures = 0;
  for (const std::string& name : o.configs) {
    const auto it = kConfigs.find(name);
    if (it == kConfigs.end()) {
      std::fprintf(stderr, "unknown config '%s'\n", name.c_str());
      return 2;
    }
    const Config& c = it->second;
    const std::vector<float> base = c.float_data ? uniform_floats(c.nb, c.dim, 1) : uniform_integers(c.nb, c.dim, 1);
    const std::vector<float> queries =
        c.float_data ? uniform_floats(c.nq, c.dim, 2) : uniform_integers(c.nq, c.dim, 2);
    Index index(c.dim, c.metric, Backend::Cuda);
    const Clock::time_point t0 = Clock::now();
    index.add(FloatView{base.data(), c.nb, c.dim, 0});
    notes.push_back("- base upload (" + c.name + ", " + std::to_string(c.nb) + " x " + std::to_string(c.dim) +
                    "): " + fmt("%.1f", seconds_since(t0) * 1e3) + " ms");
    // Auto's distance on these inputs, per guard setting (explain_search: the choice a one-shot search makes).
    std::map<Guard, std::optional<DistanceAlgorithm>> auto_paths;
    const auto resolve_auto = [&](const Config& cc, Guard guard) -> std::optional<DistanceAlgorithm> {
      const auto known = auto_paths.find(guard);
      if (known != auto_paths.end()) return known->second;
      std::optional<DistanceAlgorithm> path;
      try {
        SearchParams p;
        p.k = cc.k;
        p.metric = cc.metric;
        p.backend = Backend::Cuda;
        p.guard = guard;
        const SearchPlan plan = explain_search(FloatView{base.data(), cc.nb, cc.dim, 0},
                                               FloatView{queries.data(), cc.nq, cc.dim, 0}, p);
        if (plan.distance != DistanceAlgorithm::Auto) path = plan.distance;
      } catch (const Error&) {
      }
      auto_paths[guard] = path;
      return path;
    };
    if (c.calls > 0) {
      // Auto with and without the kept operand copy, then each exact GEMM-form distance forced; all must agree.
      std::vector<CallVariant> variants{{DistanceAlgorithm::Auto, true, true},
                                        {DistanceAlgorithm::Auto, false, true},
                                        {DistanceAlgorithm::Auto, true, false}};
      // Not on float data the paths exact only on integers: they refuse it (the other configurations forgive that).
      for (DistanceAlgorithm d : {DistanceAlgorithm::Fused, DistanceAlgorithm::Cublas, DistanceAlgorithm::Fp16Mma})
        if (!(c.float_data && distance_requires_integer_data(d))) variants.push_back({d, true, true});
      // Auto's own pair forced (as the Index plans it: explain_search), then both again in turns: Auto's host cost
      // beyond the same pair's, and what alternating requests add (the suite's duel alternates).
      const SearchPlan own = explain_search(FloatView{base.data(), c.nb, c.dim, 0},
                                            FloatView{queries.data(), c.nq, c.dim, 0},
                                            CallVariant{DistanceAlgorithm::Auto}.params(c));
      const CallVariant own_pair{own.distance, true, true, own.select};
      const size_t first_alternating = variants.size() + 1;
      variants.push_back(own_pair);
      variants.push_back({DistanceAlgorithm::Auto, true, true, SelectAlgorithm::Auto, true});
      variants.push_back({own.distance, true, true, own.select, true});
      std::vector<int64_t> first_ids;
      for (size_t vi = 0; vi < variants.size(); ++vi) {
        const CallVariant& v = variants[vi];
        const std::string pair = v.pair();
        if (!std::regex_search(pair, filter)) continue;
        // The alternating two take turns with each other.
        const CallVariant* partner =
            vi < first_alternating ? nullptr : &variants[vi == first_alternating ? vi + 1 : first_alternating];
        std::vector<int64_t> ids;
        std::string line;
        try {
          CallNumbers numbers;
          line = measure_calls(index, queries, c, v, partner, &ids, &numbers);
          // The path: forced, or Auto without the kept copy (it chooses as a one-shot search does); Auto with the
          // kept copy may choose otherwise than explain_search says, so it stays out of the CSV.
          std::optional<DistanceAlgorithm> path;
          if (v.distance != DistanceAlgorithm::Auto) path = v.distance;
          else if (!v.keep) path = resolve_auto(c, Guard::Auto);
          if (path)
            csv_rows.push_back(make_csv_row(c, v.name(), *path, to_string(v.select), numbers.wall_ms,
                                            numbers.distance_ms, numbers.select_ms, numbers.query_tiles, v.keep,
                                            ceilings));
          const bool same = first_ids.empty() || ids == first_ids;
          if (first_ids.empty()) first_ids = ids;
          if (!same) ++failures;
          line += same ? " yes |" : " **NO** |";
        } catch (const Error& e) {
          detail::cuda::set_operand_cache_enabled(true);
          detail::cuda::set_fused_split_merge_enabled(true);
          line = "| " + c.name + " | " + pair + " | error: " + e.what() + " | | | | | | | | | | | | | |";
          ++failures;
        }
        lines.push_back(line);
        std::printf("%s\n", lines.back().c_str());
        std::fflush(stdout);
      }
      continue;
    }
    Result reference;
    bool have_reference = false;
    // (distance, whether the fused kernel may merge the splits' lists itself, query tiles forced or 0): Auto also
    // without that merge and with the queries cut into 2 and 4 tiles.
    // Float data: every path is also run without the exactness guard ('-noguard': its float32/TF32 keys as they
    // are), which measures what the guard's re-rank costs.
    struct DistanceVariant {
      DistanceAlgorithm d;
      bool merge = true;
      int64_t query_tiles = 0;
      Guard guard = Guard::Auto;
    };
    std::vector<DistanceVariant> distances{{DistanceAlgorithm::Auto, true, 0},
                                           {DistanceAlgorithm::Auto, false, 0},
                                           {DistanceAlgorithm::Auto, true, 2},
                                           {DistanceAlgorithm::Auto, true, 4}};
    for (DistanceAlgorithm d : distance_algorithms(Backend::Cuda, c.metric)) {
      distances.push_back({d});
      if (c.float_data && !distance_requires_integer_data(d)) distances.push_back({d, true, 0, Guard::Off});
    }
    if (c.float_data) distances.push_back({DistanceAlgorithm::Auto, true, 0, Guard::Off});
    for (const auto& [d, merge, query_tiles, guard] : distances)
      for (SelectAlgorithm s : selections(o, c.k)) {
        const std::string dname = to_string(d) + (merge ? "" : "-nomerge") +
                                  (query_tiles > 0 ? "-qtiles" + std::to_string(query_tiles) : "") +
                                  (guard == Guard::Off ? "-noguard" : "");
        const std::string pair = dname + "/" + to_string(s);
        if (!std::regex_search(pair, filter)) continue;
        Row row;
        const std::string timed_as = to_string(c.metric) + ":" + pair;
        const auto g = garcia_seconds.find(timed_as);
        const double estimate = g == garcia_seconds.end() ? 0 : g->second * double(c.nq) * double(c.nb) / garcia_pairs;
        if (!c.small() && estimate > o.time_limit_s) {
          row.status = "skipped: estimated " + fmt("%.0f", estimate) + " s > " + fmt("%.0f", o.time_limit_s) + " s";
        } else {
          SearchParams p;
          p.k = c.k;
          p.metric = c.metric;
          p.backend = Backend::Cuda;
          p.distance = d;
          p.select = s;
          p.guard = guard;
          Result got;
          detail::cuda::set_fused_split_merge_enabled(merge);
          if (query_tiles > 0) detail::cuda::set_tile_override({(c.nq + query_tiles - 1) / query_tiles, 0});
          try {
            row = measure(index, queries, c, p, o, &got);
            detail::cuda::set_fused_split_merge_enabled(true);
            detail::cuda::set_tile_override({});
            fill_rates(row, c, copy_gbs);
            const std::optional<DistanceAlgorithm> path = d == DistanceAlgorithm::Auto ? resolve_auto(c, guard) : d;
            if (path)
              csv_rows.push_back(make_csv_row(c, dname, *path, to_string(s), row.median.wall_s * 1e3,
                                              row.median.stages.distance_ms, row.median.stages.select_ms,
                                              row.median.stages.query_tiles, true, ceilings));
            if (!have_reference && guard != Guard::Off) {
              reference = got;
              have_reference = true;
            }
            // Every guarded pair is exact (integer data: exact keys; float data: the guard's re-rank), so all must
            // agree bit for bit. Unguarded float keys may differ within float rounding: not compared.
            row.same = guard == Guard::Off ||
                       (got.indices == reference.indices && got.distances == reference.distances);
            if (!row.same) ++failures;
            if (c.small()) garcia_seconds[timed_as] = row.median.wall_s;
          } catch (const Error& e) {
            detail::cuda::set_fused_split_merge_enabled(true);
            detail::cuda::set_tile_override({});
            row.status = std::string("error: ") + e.what();
            // A lower-precision kernel refusing data it is not exact on is the expected answer, not a failure.
            if (!(c.float_data && distance_requires_integer_data(d))) ++failures;
          }
        }
        row.config = c.name;
        row.distance = dname;
        row.select = to_string(s);
        lines.push_back(table_line(row));
        std::printf("%s\n", lines.back().c_str());
        std::fflush(stdout);
      }
    if (have_reference) {  // every guarded pair equals this one ("same"), so all equal the oracle on the sample
      const auto [note, exact] = sampled_oracle_check(base, queries, c, reference);
      notes.push_back(note);
      if (!exact) ++failures;
    }
  }
  lines.push_back("");
  lines.insert(lines.end(), notes.begin(), notes.end());
  for (const std::string& n : notes) std::printf("%s\n", n.c_str());
  // The floors: the ceilings, then per (config, distance as run) the selection with the fastest distance stage.
  // The rows start "| config / distance |", which scripts/device-check.sh's fastest-pair scan does not take.
  std::vector<std::string> floors{""};
  floors.insert(floors.end(), ceiling_section.begin(), ceiling_section.end());
  const size_t printed_from = floors.size();  // stdout had the ceilings at the start
  floors.insert(floors.end(), {"", "## Distance stage against the ceilings", ""});
  floors.push_back("All rows (every selection): " + o.csv + ". Here the selection with the fastest distance stage.");
  floors.push_back("");
  floors.push_back("| config / distance | path | unit | k | distance ms | floor ms | bound | of arith ceiling | "
                   "of HBM bw |");
  floors.push_back("|---|---|---|---|---|---|---|---|---|");
  std::map<std::string, size_t> fastest;  // "config / distance" -> index into csv_rows
  std::vector<std::string> order;
  for (size_t i = 0; i < csv_rows.size(); ++i) {
    const std::string key = csv_rows[i].config + " / " + csv_rows[i].distance;
    const auto [it, fresh] = fastest.emplace(key, i);
    if (fresh) order.push_back(key);
    else if (csv_rows[i].distance_ms < csv_rows[it->second].distance_ms) it->second = i;
  }
  for (const std::string& key : order) {
    const CsvRow& r = csv_rows[fastest[key]];
    const gknn_bench::StageFloor& f = r.floor;
    const std::string floor_cells = f.valid ? fmt("%.3f", f.floor_ms) + " | " + f.bound() + " | " +
                                                  fmt("%.1f%%", 100 * f.arith_fraction) + " | " +
                                                  fmt("%.1f%%", 100 * f.hbm_fraction)
                                            : std::string("- | - | - | -");
    floors.push_back("| " + key + " | " + r.path + " | " + gknn_bench::unit_name(f.unit) + " | " +
                     std::to_string(r.k) + " | " + fmt("%.3f", r.distance_ms) + " | " + floor_cells + " |");
  }
  for (size_t i = printed_from; i < floors.size(); ++i) std::printf("%s\n", floors[i].c_str());
  lines.insert(lines.end(), floors.begin(), floors.end());
  if (FILE* f = std::fopen(o.out.c_str(), "w")) {
    for (const std::string& l : lines) std::fprintf(f, "%s\n", l.c_str());
    std::fclose(f);
  }
  if (FILE* f = std::fopen(o.csv.c_str(), "w")) {
    std::fprintf(f, "%s\n", kCsvHeader);
    for (const CsvRow& r : csv_rows) std::fprintf(f, "%s\n", csv_line(r).c_str());
    std::fclose(f);
    std::printf("gknn_gpu_bench: %zu row(s) of distance stages against the ceilings in %s\n", csv_rows.size(),
                o.csv.c_str());
  } else {
    std::fprintf(stderr, "gknn_gpu_bench: cannot write %s\n", o.csv.c_str());
    ++failures;
  }
  std::printf("gknn_gpu_bench: %s (%d pair(s) failed or disagreed)\n", failures ? "FAILED" : "OK", failures);
  return failures ? 1 : 0;
}
