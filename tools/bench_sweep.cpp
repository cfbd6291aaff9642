// bench_sweep.cpp: see bench_sweep.hpp.
#include "bench_sweep.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "cli_common.hpp"
#include "gknn/error.hpp"
#include "gknn/generate.hpp"
#include "gknn/index.hpp"
#include "gknn/info.hpp"

namespace gknn::cli {
namespace {

constexpr double kNoLimit = std::numeric_limits<double>::infinity();

/// Uniform data of a kind: integers 0..255 (uint8 descriptors) or floats in [0, 1).
HostMatrix<float> sweep_data(int64_t rows, int64_t cols, bool integer, uint64_t seed) {
  GenerateParams g;
  g.seed = seed;
  HostMatrix<float> m = generate(rows, cols, g);
  if (integer)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) m.row(i)[j] = std::floor(m.row(i)[j] * 256.f);
  return m;
}

/// A seed that depends only on what it draws, not on the grid or on which cells ran before, so that a sweep cut into
/// slices (--resume, --sweep-budget) measures every cell on the data one uninterrupted run would have used.
uint64_t data_seed(bool integer, int64_t rows, int64_t cols, int64_t salt) {
  uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(integer);  // FNV-1a over the numbers
  for (int64_t v : {rows, cols, salt}) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
  return h;
}

/// The device a table row names: the CUDA device's name (commas would split the CSV field), or "cpu".
std::string device_name(const SearchParams& params, Backend backend) {
  if (backend != Backend::Cuda) return "cpu";
  for (const DeviceInfo& d : cuda_devices())
    if (d.ordinal == params.device) {
      std::string name = d.name;
      std::replace(name.begin(), name.end(), ',', ' ');
      return name;
    }
  return "cuda";
}

/// One cell of the grid. Its key (the first seven CSV fields, device included: a cell measured on an H200 is not a
/// measurement of the H100) identifies it in the timings CSV and, with the metric's class, in the plan table.
struct SweepCell {
  std::string metric;  ///< as given to --sweep-metrics
  std::string data;    ///< "integer" or "float"
  int64_t n = 0, q = 0, d = 0, k = 0;

  std::string key(const std::string& device) const {
    return device + "," + metric + "," + data + "," + std::to_string(n) + "," + std::to_string(q) + "," +
           std::to_string(d) + "," + std::to_string(k);
  }
  std::string label() const {
    return metric + " " + data + " n=" + std::to_string(n) + " q=" + std::to_string(q) + " d=" + std::to_string(d) +
           " k=" + std::to_string(k);
  }
};

/// A candidate pair: a distance and a selection algorithm.
using Pair = std::pair<DistanceAlgorithm, SelectAlgorithm>;
/// A pair by the names the CSV gives it, so that pairs read back from a resumed CSV compare with this run's.
using PairNames = std::pair<std::string, std::string>;
/// The pairs of a cell that are skipped as hopeless, each with the time it is recorded with (an estimate).
using HopelessPairs = std::map<PairNames, double>;

PairNames names_of(const Pair& pair) { return {to_string(pair.first), to_string(pair.second)}; }

/// The distance name under which a selection capped behind any distance is recorded (CappedPairs::hopeless_in).
constexpr const char* kAnyDistance = "*";

/// A pair's entry in `hopeless`: its own, or for a selection-round pair its selection's behind any distance (the
/// selection's cost hardly depends on which distance made the keys: on the H200 `insertion` at k = 1000 was capped
/// behind shared_reduce at q = 1, n = 1M, d = 3, then ran behind another distance at q = 64 until the device command's
/// limit, twice). Null: not hopeless.
const double* hopeless_estimate(const HopelessPairs& hopeless, const Pair& pair) {
  auto found = hopeless.find(names_of(pair));
  if (found == hopeless.end() && pair.second != SelectAlgorithm::Auto)
    found = hopeless.find({kAnyDistance, to_string(pair.second)});
  return found == hopeless.end() ? nullptr : &found->second;
}

/// The candidates of a cell, in the order they are timed: every distance with Auto's selection, then every selection
/// (by name: a table row names its algorithms) with the fastest distance, as the test suite covers the algorithms —
/// unless that distance keeps the top k itself there (CellBench::selects_itself).
std::vector<DistanceAlgorithm> candidate_distances(Backend backend, Metric metric, bool integer) {
  std::vector<DistanceAlgorithm> out;
  for (DistanceAlgorithm d : compiled_distance_algorithms(backend, metric))
    if (d != DistanceAlgorithm::Reference && (integer || !distance_requires_integer_data(d))) out.push_back(d);
  return out;
}

std::vector<SelectAlgorithm> candidate_selects(Backend backend, int64_t k) {
  std::vector<SelectAlgorithm> out;
  for (const SelectCapability& s : compiled_select_algorithms(backend))
    if (k <= s.max_k) out.push_back(s.algorithm);
  return out;
}

/// The first round's pairs: every candidate distance with Auto's selection.
std::vector<Pair> distance_round(Backend backend, Metric metric, bool integer) {
  std::vector<Pair> out;
  for (DistanceAlgorithm d : candidate_distances(backend, metric, integer)) out.emplace_back(d, SelectAlgorithm::Auto);
  return out;
}

/// The second round's pairs: every candidate selection with the first round's fastest distance.
std::vector<Pair> selection_round(Backend backend, int64_t k, DistanceAlgorithm distance) {
  std::vector<Pair> out;
  for (SelectAlgorithm s : candidate_selects(backend, k)) out.emplace_back(distance, s);
  return out;
}

/// The pair a round times although it is hopeless: when every pair of the round is, the one with the smallest
/// estimate, since the round needs a measured best (a skipped pair never is one); otherwise none.
std::optional<Pair> forced_pair(const std::vector<Pair>& round, const HopelessPairs& hopeless) {
  std::optional<Pair> out;
  double out_ms = kNoLimit;
  for (const Pair& pair : round) {
    const double* estimate = hopeless_estimate(hopeless, pair);
    if (!estimate) return std::nullopt;
    if (!out || *estimate < out_ms) {
      out = pair;
      out_ms = *estimate;
    }
  }
  return out;
}

/// The pairs of a round that are called: those not hopeless, or the forced one.
size_t called_in_round(const std::vector<Pair>& round, const HopelessPairs& hopeless) {
  if (forced_pair(round, hopeless)) return 1;
  return static_cast<size_t>(std::count_if(round.begin(), round.end(), [&](const Pair& pair) {
    return hopeless_estimate(hopeless, pair) == nullptr;
  }));
}

struct Timed {
  DistanceAlgorithm distance;
  SelectAlgorithm select;
  double ms;
  int runs;     ///< timed runs behind `ms`: 1 when capped, 0 when skipped as hopeless (`ms` is then an estimate)
  bool capped;  ///< its first call took more than the cap times the cell's best: not repeated, `ms` is that call
};

/// How much longer than the cap a cold first call may take and still get a second call (CellBench::time): the
/// one-time costs of a first search (lazy kernel loading, a kept operand copy of a 4M-row base) stay below it.
constexpr double kColdCallMs = 200.0;

/// Searches a pair costs: its first call (the warm-up, or an extra one with --warmup 0: it decides the cap), the
/// rest of the warm-up, then the timed runs.
int searches_per_pair(int warmup, int repeat) { return std::max(warmup, 1) + repeat; }

/// Timed runs go on past --repeat while they sum to less than kMinTimedMs, up to kMaxRuns: the median of three calls
/// of a tenth of a millisecond moved by 35% between two timings of one pair (H200 suite, 2026-11-29: the same
/// shared_reduce + bits_global at 0.071 and 0.096 ms; a cuBLAS pair at 0.065, 0.091 and 0.163 ms).
constexpr double kMinTimedMs = 25.0;
constexpr size_t kMaxRuns = 51;
bool more_runs(size_t runs, int repeat, double timed_ms) {
  return runs < static_cast<size_t>(repeat) || (timed_ms < kMinTimedMs && runs < kMaxRuns);
}

/// A pair whose warm-up call took at least `long_call_ms` (SweepOptions::long_call_ms) is timed once after it: calls
/// that long move by a few percent, far below the 10% the plan table and the Auto re-check judge by, while every
/// extra call of the grid's largest cells costs seconds. Others go on while more_runs says so.
bool timed_once(double warm_ms, double long_call_ms) { return warm_ms >= long_call_ms; }

/// Auto's plan as its search ran it (SearchStats): a search through an Index may choose otherwise than
/// explain_search's one-shot plan (the fused kernel on the Index's kept operand copy with a few queries), and the
/// cell's Auto pair is the one it timed. Where the search reported nothing, the plan as explained.
SearchPlan as_ran(SearchPlan plan, const SearchStats& ran) {
  if (ran.distance_algorithm == DistanceAlgorithm::Auto) return plan;
  if (plan.distance != ran.distance_algorithm) plan.distance_reason = "as the Index's search ran it";
  if (plan.select != ran.select_algorithm) plan.select_reason = "as the Index's search ran it";
  plan.distance = ran.distance_algorithm;
  plan.select = ran.select_algorithm;
  plan.selects_itself = ran.select_algorithm == SelectAlgorithm::Auto;
  return plan;
}

/// GKNN_SWEEP_TRACE set (not "0"): each candidate's call is announced on stderr before it starts, so that a log cut
/// off at a device command's limit names the call it was in.
bool trace_calls() {
  static const bool on = [] {
    const char* v = std::getenv("GKNN_SWEEP_TRACE");
    return v && std::string_view(v) != "0";
  }();
  return on;
}

class CellBench {
 public:
  CellBench(const Index& index, FloatView base, const HostMatrix<float>& queries, const SearchParams& params,
            int warmup, int repeat, double cap, double long_call_ms)
      : index_(index), base_(base), queries_(queries), params_(params), warmup_(warmup), repeat_(repeat), cap_(cap),
        long_call_ms_(long_call_ms) {}

  /// Median wall time of the pair in ms after the warm-up; nullopt when the backend refuses the pair (metric, k,
  /// data). A pair whose call exceeds `cutoff_ms` is not run again (capped): the slow kernels of a large cell would
  /// otherwise take minutes to lose. A first call over the cutoff by less than kColdCallMs gets a second call, which
  /// decides: a cold first call pays once for what later searches of the index do not (kernels loaded lazily, the
  /// kept operand copy of the base, workspaces). H200 suite, 2026-11-27: tf32 capped at 0.59 ms on its first call
  /// (guarded, n = 16384, q = 64) where Auto's repeated calls of the same pair took 0.12.
  /// `first_stats`: the first call's SearchStats (what it ran; that call's timing only decides the cap).
  std::optional<Timed> time(DistanceAlgorithm distance, SelectAlgorithm select, double cutoff_ms,
                            SearchStats* first_stats = nullptr) const {
    SearchParams p = params_;
    p.distance = distance;
    p.select = select;
    try {
      double first = run_ms(p, first_stats);
      if (first > cutoff_ms && first <= cutoff_ms + kColdCallMs) first = run_ms(p);
      if (first > cutoff_ms) return Timed{distance, select, first, 1, true};
      const bool once = timed_once(first, long_call_ms_);
      if (!once)  // a long first call is warm-up enough
        for (int i = 1; i < warmup_; ++i) run_ms(p);
      std::vector<double> runs;
      double timed = 0;
      do timed += runs.emplace_back(run_ms(p));
      while (!once && more_runs(runs.size(), repeat_, timed));
      return Timed{distance, select, median(runs), static_cast<int>(runs.size()), false};
    } catch (const Error& e) {
      if (passed_over(e, distance, select)) return std::nullopt;
      throw;
    }
  }

  /// Auto and another pair timed side by side (--sweep-best-from): after each one's warm-up, their runs alternate,
  /// as many of each as time() would take for the slower one, so that both meet the same clocks and the same state of
  /// the host; both medians. Nullopt where the backend refuses the other pair now.
  /// `auto_stats`: the SearchStats of Auto's first warm-up call (what it ran).
  std::optional<std::pair<Timed, Timed>> duel(DistanceAlgorithm distance, SelectAlgorithm select,
                                              SearchStats* auto_stats) const {
    SearchParams a = params_, b = params_;
    a.distance = DistanceAlgorithm::Auto;
    a.select = SelectAlgorithm::Auto;
    b.distance = distance;
    b.select = select;
    try {
      double warm_ms = 0;  // the slower one's last warm-up call
      for (int i = 0; i < std::max(warmup_, 1); ++i)
        warm_ms = std::max(run_ms(a, i == 0 ? auto_stats : nullptr), run_ms(b));
      const bool once = timed_once(warm_ms, long_call_ms_);
      std::vector<double> ra, rb;
      double sum_a = 0, sum_b = 0;
      while (ra.empty() || (!once && more_runs(ra.size(), repeat_, std::max(sum_a, sum_b)))) {
        if (ra.size() % 2 == 0) {  // each goes first every second round: neither always follows the other
          sum_a += ra.emplace_back(run_ms(a));
          sum_b += rb.emplace_back(run_ms(b));
        } else {
          sum_b += rb.emplace_back(run_ms(b));
          sum_a += ra.emplace_back(run_ms(a));
        }
      }
      const int runs = static_cast<int>(ra.size());
      return std::pair{Timed{DistanceAlgorithm::Auto, SelectAlgorithm::Auto, median(ra), runs, false},
                       Timed{distance, select, median(rb), runs, false}};
    } catch (const Error& e) {
      if (passed_over(e, distance, select)) return std::nullopt;
      throw;
    }
  }

  /// The pair Auto resolved to in this cell (a distance-round pair: its distance with the rules' selection): never
  /// skipped as hopeless, since Auto's own time already says it is not (H200, integer 4194304 x 10000 x 2, k = 1:
  /// the fused pair skipped, the cell's "best" tf32x3 at 113 ms beside Auto's fused 21.7 ms).
  static bool autos_own(const Pair& pair, const SearchPlan& auto_plan) {
    return pair.first == auto_plan.distance &&
           (pair.second == SelectAlgorithm::Auto || pair.second == auto_plan.select || auto_plan.selects_itself);
  }

  /// The fastest pair of the two rounds (distance_round, then selection_round). Every timing goes to `all`; a
  /// candidate is capped at `cap` times the fastest time so far in the cell, either round, or Auto's (`automatic`,
  /// timed before them; `auto_plan` its plan) where that is faster: the round starts with the SIMT baselines, and
  /// without a reference the first of them set the cap (H200, integer 262144 x 1024 x 960, k = 1: naive 1006 ms,
  /// then atomic 1454 ms, each timed four times beside Auto's 4.5 ms). A `hopeless` pair is not called (but see
  /// forced_pair): it goes to `all` with its estimate, runs 0 and capped, and is never the best, but Auto's own pair
  /// (autos_own) always runs.
  std::optional<Timed> best(Backend backend, bool integer, const HopelessPairs& hopeless, const Timed& automatic,
                            const SearchPlan& auto_plan, std::vector<Timed>& all) const {
    double best_ms = automatic.ms;
    const auto fastest = [&](const std::vector<Pair>& round) {
      std::optional<Timed> out;
      // A round that holds Auto's own pair has a timed pair: no other is forced on it.
      const bool has_autos =
          std::any_of(round.begin(), round.end(), [&](const Pair& p) { return autos_own(p, auto_plan); });
      const std::optional<Pair> forced = has_autos ? std::nullopt : forced_pair(round, hopeless);
      for (const Pair& pair : round) {
        const double* skip = hopeless_estimate(hopeless, pair);
        if (skip && forced != pair && !autos_own(pair, auto_plan)) {
          all.push_back(Timed{pair.first, pair.second, *skip, 0, true});
          continue;
        }
        if (trace_calls())
          std::fprintf(stderr, "sweep: n=%lld q=%lld k=%lld calling %s/%s\n", (long long)index_.size(),
                       (long long)queries_.rows, (long long)params_.k, to_string(pair.first).c_str(),
                       to_string(pair.second).c_str());
        const std::optional<Timed> t = time(pair.first, pair.second, best_ms < kNoLimit ? cap_ * best_ms : kNoLimit);
        if (!t) continue;
        all.push_back(*t);
        best_ms = std::min(best_ms, t->ms);
        if (!out || t->ms < out->ms) out = t;
      }
      return out;
    };
    const std::optional<Timed> distance = fastest(distance_round(backend, params_.metric, integer));
    // (Only integer data have a fused path: explain_search scans the base, seconds for the largest float cells.)
    if (!distance || (integer && selects_itself(distance->distance, auto_plan))) return distance;
    return fastest(selection_round(backend, params_.k, distance->distance));
  }

 private:
  /// Whether a pair whose call threw `e` is left out of the cell: the backend refuses it (Unsupported), or it does
  /// not fit the device even in its smallest tiles (OutOfMemory, said on stderr): one pair must not end a sweep.
  bool passed_over(const Error& e, DistanceAlgorithm distance, SelectAlgorithm select) const {
    if (e.code() == ErrorCode::OutOfMemory)
      std::fprintf(stderr, "sweep: n=%lld q=%lld d=%lld k=%lld %s/%s left out: %s\n", (long long)index_.size(),
                   (long long)queries_.rows, (long long)base_.cols, (long long)params_.k, to_string(distance).c_str(),
                   to_string(select).c_str(), e.what());
    return e.code() == ErrorCode::Unsupported || e.code() == ErrorCode::OutOfMemory;
  }

  /// One call's wall time; `stats` set: that call also reports its phases and what it ran (its timing then includes
  /// the phases' CUDA events, so it is a warm-up or cap call, never a timed run).
  double run_ms(const SearchParams& p, SearchStats* stats = nullptr) const {
    SearchParams call = p;
    if (stats) call.stats = stats;
    Stopwatch clock;
    index_.search(queries_.view(), call);
    return clock.seconds() * 1000.0;
  }

  /// Whether `distance` keeps the top k itself in this cell (the fused kernel where it serves): every selection
  /// beside it would time the same search, so the selection round is left out (the cell's pair: its Auto). Auto's
  /// plan answers for its own distance (no second scan of the base).
  bool selects_itself(DistanceAlgorithm distance, const SearchPlan& auto_plan) const {
    if (distance == auto_plan.distance) return auto_plan.selects_itself;
    SearchParams p = params_;
    p.distance = distance;
    p.select = SelectAlgorithm::Auto;
    return explain_search(base_, queries_.view(), p).selects_itself;
  }

  const Index& index_;
  FloatView base_;
  const HostMatrix<float>& queries_;
  const SearchParams& params_;
  int warmup_, repeat_;
  double cap_, long_call_ms_;
};

/// --sweep-budget's forecast of the wall time of work not yet done, from what it computes (docs/planner.md):
///   ms = calls x fixed + rate x work
/// A cell: calls = its searches, (candidate pairs called + Auto) x searches_per_pair (an upper bound: a capped pair
/// runs once; Sweep::planned_searches), work = calls x n x q x (d + 16); the "+ 16" stands for the selection's work
/// per distance, so that d = 2 cells do not look free. A group (drawing a base and adding it to the index, once per
/// metric, data kind, n and d): calls = 1, work = n x d.
/// `fixed` is the smallest time per call measured (what a search of the smallest cells costs: launches, the host's
/// share), `rate` what the measurements took beyond it per unit of work (sums over them, so the large cells, which the
/// budget must not misjudge, weigh most). Measured: what this run measured (wall time) and, for cells on --resume,
/// the CSV's timings. Without any measurement the forecast is 0.
class CostModel {
 public:
  static double cell_work(int64_t searches, int64_t n, int64_t q, int64_t d) {
    return static_cast<double>(searches) * static_cast<double>(n) * static_cast<double>(q) * static_cast<double>(d + 16);
  }
  static double group_work(int64_t n, int64_t d) { return static_cast<double>(n) * static_cast<double>(d); }

  void observe(double calls, double work, double ms) { seen_.push_back({calls, work, ms}); }

  double forecast_ms(double calls, double work) const {
    if (seen_.empty()) return 0;
    double fixed = kNoLimit, beyond = 0, total_work = 0;
    for (const Seen& s : seen_) fixed = std::min(fixed, s.ms / s.calls);
    for (const Seen& s : seen_) {
      beyond += std::max(0.0, s.ms - s.calls * fixed);
      total_work += s.work;
    }
    return calls * fixed + (total_work > 0 ? beyond / total_work * work : 0);
  }

 private:
  struct Seen {
    double calls, work, ms;
  };
  std::vector<Seen> seen_;
};

/// The fields of a line, split at commas (the sweep's files never quote).
std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(line.substr(start, comma - start));
  out.push_back(line.substr(start));
  return out;
}

/// A cell's key from a line's fields: the first seven (device, metric, data, n, q, d, k), which the timings CSV and
/// the plan table share (SweepCell::key writes the same).
std::string cell_key_of(const std::vector<std::string>& f) {
  return f[0] + "," + f[1] + "," + f[2] + "," + f[3] + "," + f[4] + "," + f[5] + "," + f[6];
}

/// The text of a file, or "" when it does not exist yet.
std::string read_if_present(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return in.good() ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

/// The lines of a text, without their '\r' (a file edited on Windows) and without the empty last one.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    start = end + 1;
  }
  return out;
}

/// The fields of the CSV's lines (TimingsCsv::kHeader).
using Rows = std::vector<std::vector<std::string>>;

/// A line's cell.
SweepCell cell_of_fields(const std::vector<std::string>& f) {
  return SweepCell{f[1], f[2], std::stoll(f[3]), std::stoll(f[4]), std::stoll(f[5]), std::stoll(f[6])};
}

/// A complete cell of a resumed CSV, as the cost model sees it.
struct PastCell {
  int64_t n = 0, q = 0, d = 0, searches = 0;
  double ms = 0;
};

/// The cells of a resumed CSV's rows (one device's, each cell's rows together) with the searches behind them: a
/// skipped candidate (runs 0) made none, a capped one one, the others their runs and a warm-up, which is not in the
/// file: `warmup_calls` (this run's) is assumed.
std::vector<PastCell> past_cells(const Rows& rows, int warmup_calls) {
  std::vector<PastCell> past;
  std::string last_key;
  for (const std::vector<std::string>& f : rows) {
    const std::string key = cell_key_of(f);
    if (key != last_key) past.push_back({std::stoll(f[3]), std::stoll(f[4]), std::stoll(f[5]), 0, 0});
    last_key = key;
    const int searches = f[11] == "0" ? 0 : f[14] == "1" ? 1 : warmup_calls + std::stoi(f[11]);
    past.back().searches += searches;
    past.back().ms += std::stod(f[10]) * searches;
  }
  return past;
}

/// A cell's fastest candidate that was run: its time and its pair's names.
struct Fastest {
  double ms = 0;
  PairNames pair;
};

/// The fastest measured candidate of each cell of a resumed CSV's rows, by cell key (a cell whose candidates were
/// all skipped, which forced_pair prevents, would get ms 0: no loss known, so nothing is pruned from it). The
/// pruning reads its time, --sweep-best-from its pair (the pair Auto is timed against).
std::map<std::string, Fastest> fastest_measured(const Rows& rows) {
  std::map<std::string, Fastest> out;
  for (const std::vector<std::string>& f : rows) {
    Fastest& best = out.try_emplace(cell_key_of(f)).first->second;
    if (f[7] != "candidate" || f[11] == "0") continue;
    const double ms = std::stod(f[10]);
    if (best.ms == 0 || ms < best.ms) best = Fastest{ms, {f[8], f[9]}};
  }
  return out;
}

/// Auto's time in each cell of a timings CSV's rows (its `auto` line).
std::map<std::string, double> auto_times(const Rows& rows) {
  std::map<std::string, double> out;
  for (const std::vector<std::string>& f : rows)
    if (f[7] == "auto") out[cell_key_of(f)] = std::stod(f[10]);
  return out;
}

/// The candidates capped so far on this device (in this run's cells and a resumed CSV's, the skipped ones included)
/// by the cell they were capped in: a pair that lost by `hopeless_loss` or more in a smaller neighbour of a cell is
/// hopeless there (the large cells' single calls of such pairs took minutes on the H200). The loss, not the cap (4x)
/// alone: a pair 4-16x behind at few queries can win at many (on the H200 the fused kernel was 7x faster than cuBLAS
/// at n = 262144, q = 10000, d = 128, k = 1, where pruning every pair capped at q = 1 had skipped it), while the
/// pairs that took minutes in the large cells (`insertion` at k = 1000) lose by far more (default 16).
class CappedPairs {
 public:
  explicit CappedPairs(double hopeless_loss) : hopeless_loss_(hopeless_loss) {}

  /// `ms`: the pair's capped time (or its estimate when skipped); `best_ms`: the fastest pair's time in that cell.
  void add(const SweepCell& cell, const PairNames& pair, double ms, double best_ms) {
    by_series_[series(cell)].push_back({cell.n, cell.q, pair, ms, best_ms > 0 ? ms / best_ms : kNoLimit});
  }

  /// The pairs that lost by `hopeless_loss` in a smaller neighbour of `cell` (same metric, data, d and k, and the same
  /// n with a smaller q or the same q with a smaller n), each with the smallest of its capped times scaled by the
  /// work ratio (n x q): its time if it did no worse per query and base row than where it lost, a lower bound more or
  /// less. A selection-round pair is also recorded as its selection behind any distance (kAnyDistance).
  HopelessPairs hopeless_in(const SweepCell& cell) const {
    HopelessPairs out;
    const auto found = by_series_.find(series(cell));
    if (found == by_series_.end()) return out;
    for (const Capped& c : found->second) {
      if (c.loss < hopeless_loss_) continue;
      if (!((c.n == cell.n && c.q < cell.q) || (c.q == cell.q && c.n < cell.n))) continue;
      const double ms = c.ms * static_cast<double>(cell.n) / static_cast<double>(c.n) *
                        static_cast<double>(cell.q) / static_cast<double>(c.q);
      const auto keep = [&](const PairNames& names) {
        const auto [it, added] = out.emplace(names, ms);
        if (!added) it->second = std::min(it->second, ms);
      };
      keep(c.pair);
      if (c.pair.second != "auto") keep({kAnyDistance, c.pair.second});  // a selection-round pair (hopeless_estimate)
    }
    return out;
  }

 private:
  struct Capped {
    int64_t n, q;
    PairNames pair;
    double ms;
    double loss;  ///< ms over the cell's fastest time
  };
  static std::string series(const SweepCell& c) {
    return c.metric + "," + c.data + "," + std::to_string(c.d) + "," + std::to_string(c.k);
  }
  double hopeless_loss_;
  std::map<std::string, std::vector<Capped>> by_series_;
};

/// The long-format CSV of every timing of the sweep (--csv), for bench/suite/report.py: one line per candidate, then
/// Auto's line, which closes the cell.
class TimingsCsv {
 public:
  static constexpr const char* kHeader =
      "device,metric,data,n,q,d,k,path,distance,select,ms,runs,auto_distance,auto_select,capped";
  static constexpr size_t kFields = 15;

  /// --resume: keeps the lines of every complete cell of `path` (a missing file has none). A cell without its auto
  /// line was cut short: its lines are dropped, so it is measured again. Returns the fields of the complete cells'
  /// lines measured on `device`. Throws Format naming the file and line of anything that is not this format.
  Rows resume(const std::string& path, const std::string& device) {
    const std::vector<std::string> lines = lines_of(read_if_present(path));
    if (lines.empty()) return {};
    GKNN_EXPECT(lines[0] == kHeader, ErrorCode::Format, path, " line 1: expected the header '", kHeader,
                "' of gknn bench --sweep --csv (a file of another format or version: move it away, or drop --resume)");
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;  // key, fields
    for (size_t i = 1; i < lines.size(); ++i) {
      if (lines[i].empty()) continue;
      std::vector<std::string> f = checked_fields(lines[i], path + " line " + std::to_string(i + 1));
      if (f[7] == "auto") complete_.insert(cell_key_of(f));
      rows.emplace_back(cell_key_of(f), std::move(f));
    }
    Rows kept;
    for (const auto& [key, f] : rows) {
      if (!complete_.count(key)) {
        ++dropped_;
        continue;
      }
      lines_.push_back(join(f));
      if (f[0] == device) kept.push_back(f);
    }
    resumed_ = complete_.size();
    return kept;
  }

  bool complete(const std::string& key) const { return complete_.count(key) != 0; }

  void add_cell(const std::string& key, const std::vector<Timed>& candidates, const Timed& automatic,
                const SearchPlan& plan) {
    for (const Timed& t : candidates) add(key, "candidate", t, plan);
    add(key, "auto", automatic, plan);
    complete_.insert(key);
  }

  std::string text() const {
    std::string out = std::string(kHeader) + "\n";
    for (const std::string& line : lines_) out += line + "\n";
    return out;
  }
  size_t rows() const { return lines_.size(); }
  size_t cells() const { return complete_.size(); }
  size_t resumed_cells() const { return resumed_; }
  size_t dropped_rows() const { return dropped_; }

 private:
  static std::string join(const std::vector<std::string>& f) {
    std::string out = f[0];
    for (size_t i = 1; i < f.size(); ++i) out += "," + f[i];
    return out;
  }

  /// The fields of a data line, checked enough that report.py and the cost model can trust them.
  static std::vector<std::string> checked_fields(const std::string& line, const std::string& where) {
    std::vector<std::string> f = split_fields(line);
    GKNN_EXPECT(f.size() == kFields, ErrorCode::Format, where, ": expected ", kFields, " comma-separated fields (",
                kHeader, "), got ", f.size());
    for (size_t i : {3, 4, 5, 6, 11}) {
      int64_t value = 0;
      const auto [end, ec] = std::from_chars(f[i].data(), f[i].data() + f[i].size(), value);
      const int64_t least = i == 11 ? 0 : 1;  // runs 0: a candidate skipped as hopeless
      GKNN_EXPECT(ec == std::errc() && end == f[i].data() + f[i].size() && value >= least, ErrorCode::Format, where,
                  ": field ", i + 1, " '", f[i], "' is not a ", least > 0 ? "positive" : "non-negative", " integer");
    }
    double ms = 0;
    const auto [end, ec] = std::from_chars(f[10].data(), f[10].data() + f[10].size(), ms);
    GKNN_EXPECT(ec == std::errc() && end == f[10].data() + f[10].size() && ms >= 0, ErrorCode::Format, where,
                ": ms '", f[10], "' is not a time");
    GKNN_EXPECT(f[7] == "candidate" || f[7] == "auto", ErrorCode::Format, where, ": path '", f[7],
                "' is not candidate or auto");
    GKNN_EXPECT(f[14] == "0" || f[14] == "1", ErrorCode::Format, where, ": capped '", f[14], "' is not 0 or 1");
    GKNN_EXPECT(f[11] != "0" || (f[7] == "candidate" && f[14] == "1"), ErrorCode::Format, where,
                ": runs 0 (skipped as hopeless) is only for a capped candidate");
    return f;
  }

  void add(const std::string& key, const char* path, const Timed& t, const SearchPlan& plan) {
    lines_.push_back(key + "," + path + "," + to_string(t.distance) + "," + to_string(t.select) + "," +
                     std::to_string(t.ms) + "," + std::to_string(t.runs) + "," + to_string(plan.distance) + "," +
                     to_string(plan.select) + "," + (t.capped ? "1" : "0"));
  }

  std::vector<std::string> lines_;
  std::set<std::string> complete_;
  size_t resumed_ = 0, dropped_ = 0;
};

/// Writes `text` to `path` through a temporary file renamed onto it, so an interrupted sweep never leaves a
/// half-written file.
void write_whole(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp-sweep";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    GKNN_EXPECT(out.good(), ErrorCode::Io, "cannot write '", temporary, "'");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  GKNN_EXPECT(!error, ErrorCode::Io, "cannot rename '", temporary, "' onto '", path, "': ", error.message());
}

/// The plan table file (--out): its comments and earlier rows kept, a new cell's row added at the end, a re-measured
/// cell's row (same device, metric class, data kind, n, q, d, k) replacing the old one where it stands.
class PlanTableFile {
 public:
  /// Reads and checks the file (Format error naming its line) before the long work; a new file gets a header.
  explicit PlanTableFile(std::string path) : path_(std::move(path)) {
    const std::string text = read_if_present(path_);
    check_plan_table(text, path_);
    lines_ = lines_of(text);
    if (std::none_of(lines_.begin(), lines_.end(), [](const std::string& l) { return l == plan_table_header(); })) {
      lines_.push_back("# gknn bench --sweep (gknn " + build_info().version + ")");
      lines_.push_back(std::string(plan_table_header()));
    }
  }

  void put(const std::string& row) {
    const std::string key = cell_of(row);
    const auto same = std::find_if(lines_.begin(), lines_.end(), [&](const std::string& l) {
      return !l.empty() && l[0] != '#' && l != plan_table_header() && cell_of(l) == key;
    });
    if (same != lines_.end()) *same = row;
    else lines_.push_back(row);
    ++written_;
  }

  void write() const {
    std::string text;
    for (const std::string& line : lines_) text += line + "\n";
    write_whole(path_, text);
  }
  size_t written() const { return written_; }

 private:
  /// A plan table row's cell (a row of fewer than seven fields, which the checked file has none of, is its own).
  static std::string cell_of(const std::string& row) {
    const std::vector<std::string> f = split_fields(row);
    return f.size() >= 7 ? cell_key_of(f) : row;
  }

  std::string path_;
  std::vector<std::string> lines_;
  size_t written_ = 0;
};

/// The base of one (metric, data kind, n, d) group in an index, and the queries of the q being measured.
class SweepGroup {
 public:
  SweepGroup(const SweepCell& first, const SearchParams& params, Backend backend)
      : integer_(first.data == "integer"),
        base_(sweep_data(first.n, first.d, integer_, data_seed(integer_, first.n, first.d, 0))),
        index_(first.d, params.metric, backend) {
    index_.set_p(params.p);
    index_.add(base_.view());
  }

  const HostMatrix<float>& base() const { return base_; }
  const Index& index() const { return index_; }
  const HostMatrix<float>& queries(int64_t q) {
    if (q != queries_.rows)
      queries_ = sweep_data(q, base_.cols, integer_, data_seed(integer_, q, base_.cols, base_.rows));
    return queries_;
  }

 private:
  bool integer_;
  HostMatrix<float> base_;
  Index index_;
  HostMatrix<float> queries_;
};

/// One sweep: the grid walked group by group, each cell measured, recorded and written out, or left for a later
/// run when the budget says so.
class Sweep {
 public:
  Sweep(const SweepOptions& options, const SearchParams& params, int warmup, int repeat)
      : options_(options), params_(params), warmup_(warmup), repeat_(repeat),
        backend_(choose_backend(params).backend), device_(device_name(params, backend_)),
        capped_(options.hopeless_loss) {}

  int run() {
    load_earlier_results();
    warm_up_backend();
    std::printf("sweep        %s (%s), median of %d after %d warm-up, cap %gx%s%s", device_.c_str(),
                to_string(backend_).c_str(), repeat_, warmup_, options_.cap, options_.prune ? "" : ", no pruning",
                options_.auto_only ? ", Auto only" : "");
    if (std::isfinite(options_.budget_s)) std::printf(", budget %g s", options_.budget_s);
    std::printf("\n%-10s %-7s %8s %6s %4s %5s  %-16s %-16s %10s %10s %6s %8s %8s %4s\n", "metric", "data", "n", "q",
                "d", "k", "distance", "select", "best ms", "auto ms", "ratio", "cell s", "est s", "skip");
    for (const std::string& metric : options_.metrics)
      for (const std::string& data : options_.data)
        for (int64_t n : options_.n)
          for (int64_t d : options_.d) sweep_group(metric, data, n, d);
    print_summary();
    return 0;
  }

 private:
  void load_earlier_results() {
    if (!options_.out.empty()) ensure_writable(options_.out, "--out");  // a typo fails before the long work
    if (!options_.csv.empty()) ensure_writable(options_.csv, "--csv");
    if (options_.resume)
      with_option("--csv", [&] {
        const Rows rows = timings_.resume(options_.csv, device_);
        for (const PastCell& c : past_cells(rows, searches_per_pair(warmup_, 0)))
          cell_costs_.observe(c.searches, CostModel::cell_work(c.searches, c.n, c.q, c.d), c.ms);
        const std::map<std::string, Fastest> best = fastest_measured(rows);
        for (const std::vector<std::string>& f : rows)
          if (f[7] == "candidate" && f[14] == "1")
            capped_.add(cell_of_fields(f), {f[8], f[9]}, std::stod(f[10]), best.at(cell_key_of(f)).ms);
      });
    if (!options_.out.empty()) with_option("--out", [&] { table_.emplace(options_.out); });
    if (!options_.best_from.empty())
      with_option("--sweep-best-from", [&] {
        const Rows rows = TimingsCsv().resume(options_.best_from, device_);
        const std::map<std::string, double> autos = auto_times(rows);
        for (const auto& [key, best] : fastest_measured(rows)) {
          const auto found = autos.find(key);
          if (best.ms > 0 && found != autos.end() && found->second > options_.recheck_above * best.ms)
            best_pairs_.emplace(key, Pair{parse_distance(best.pair.first), parse_select(best.pair.second)});
        }
      });
    if (timings_.dropped_rows() > 0)
      std::printf("resume       %zu rows of cells cut short dropped from %s (measured again)\n", timings_.dropped_rows(),
                  options_.csv.c_str());
  }

  /// One small search before any cell or group is timed: the backend's one-time costs (CUDA context, library
  /// handles, thread pools) would otherwise be charged to the first cell and inflate the forecasts after it.
  void warm_up_backend() const {
    const HostMatrix<float> data = sweep_data(256, 8, false, 0);
    Index index(8, Metric::SquaredL2, backend_);
    index.add(data.view());
    SearchParams p = params_;
    p.backend = backend_;
    p.metric = Metric::SquaredL2;
    p.distance = DistanceAlgorithm::Auto;
    p.select = SelectAlgorithm::Auto;
    p.k = 1;
    index.search(data.view(), p);
  }

  /// The cells of one base (metric, data kind, n, d): those not complete yet are measured when the budget allows;
  /// the base is drawn and indexed only for the first of them.
  void sweep_group(const std::string& metric, const std::string& data, int64_t n, int64_t d) {
    SearchParams p = params_;
    p.backend = backend_;
    p.metric = parse_metric(metric);
    p.p = p.metric == Metric::Lp ? 3.0 : 2.0;
    std::optional<SweepGroup> group;
    for (int64_t q : options_.q)
      for (int64_t k : options_.k) {
        const SweepCell cell{metric, data, n, q, d, k};
        if (k > n || timings_.complete(cell.key(device_))) continue;
        if (!options_.best_from.empty() && !best_pairs_.count(cell.key(device_))) continue;  // no pair to duel
        const HopelessPairs hopeless = options_.prune ? capped_.hopeless_in(cell) : HopelessPairs{};
        const int64_t searches = planned_searches(p.metric, cell, hopeless);
        const double cell_work = CostModel::cell_work(searches, n, q, d);
        const double forecast_ms = cell_costs_.forecast_ms(searches, cell_work) +
                                   (group ? 0 : group_costs_.forecast_ms(1, CostModel::group_work(n, d)));
        if (elapsed_.seconds() * 1000 + forecast_ms > options_.budget_s * 1000) {
          leave(cell, forecast_ms);
          continue;
        }
        if (!group) {
          const Stopwatch setup;
          group.emplace(cell, p, backend_);
          group_costs_.observe(1, CostModel::group_work(n, d), setup.seconds() * 1000);
        }
        p.k = k;
        const Stopwatch clock;
        measure(cell, *group, p, hopeless, forecast_ms);
        cell_costs_.observe(searches, cell_work, clock.seconds() * 1000);
      }
  }

  /// A cell the budget leaves to a later run; the first and the cheapest of them are named at the end.
  void leave(const SweepCell& cell, double forecast_ms) {
    const std::string named = cell.label() + " (forecast " + seconds(forecast_ms) + " s)";
    if (left_++ == 0) first_left_ = named;
    if (forecast_ms < cheapest_left_ms_) {
      cheapest_left_ms_ = forecast_ms;
      cheapest_left_ = named;
    }
  }

  /// The searches a cell costs at most: every candidate pair called and Auto, none capped. The selection round's
  /// distance is not known before the first round: it is taken to be the one with the fewest pairs called (the
  /// smaller cells' fastest distance, whose hopeless selections are known, usually stays the fastest; when another
  /// wins, the cell may cost more).
  int64_t planned_searches(Metric metric, const SweepCell& cell, const HopelessPairs& hopeless) const {
    const int per_pair = searches_per_pair(warmup_, long_cell(cell) ? 1 : repeat_);
    if (options_.auto_only) return per_pair * (options_.best_from.empty() ? 1 : 2);
    const std::vector<Pair> distances = distance_round(backend_, metric, cell.data == "integer");
    size_t selections = distances.empty() ? 0 : std::numeric_limits<size_t>::max();
    for (const Pair& d : distances)
      selections = std::min(selections, called_in_round(selection_round(backend_, cell.k, d.first), hopeless));
    const size_t pairs = called_in_round(distances, hopeless) + selections;
    return static_cast<int64_t>(pairs + 1) * per_pair;
  }

  /// Whether the cost model expects a search of this cell to take SweepOptions::long_call_ms or more (its pairs then
  /// take one timed run: timed_once).
  bool long_cell(const SweepCell& cell) const {
    return cell_costs_.forecast_ms(1, CostModel::cell_work(1, cell.n, cell.q, cell.d)) >= options_.long_call_ms;
  }

  void measure(const SweepCell& cell, SweepGroup& group, const SearchParams& p, const HopelessPairs& hopeless,
               double forecast_ms) {
    const Stopwatch clock;
    const HostMatrix<float>& queries = group.queries(cell.q);
    const CellBench bench(group.index(), group.base().view(), queries, p, warmup_, repeat_, options_.cap,
                          options_.long_call_ms);
    // Auto first: its time caps the candidates from the first one on, and its plan is explained once (CellBench::best).
    // With --sweep-best-from: Auto and that sweep's fastest pair of the cell, side by side.
    std::optional<Timed> automatic, rival;
    SearchStats ran;  // what Auto's first call ran
    if (const auto found = best_pairs_.find(cell.key(device_)); found != best_pairs_.end()) {
      if (const auto both = bench.duel(found->second.first, found->second.second, &ran)) {
        automatic = both->first;
        rival = both->second;
      }
    }
    if (!automatic) automatic = bench.time(DistanceAlgorithm::Auto, SelectAlgorithm::Auto, kNoLimit, &ran);
    if (!automatic) {
      ++unsupported_;
      return;
    }
    const SearchPlan plan = as_ran(explain_search(group.base().view(), queries.view(), p), ran);
    std::vector<Timed> candidates;
    std::optional<Timed> best = rival;  // --sweep-auto-only: none, or the duel's pair
    if (rival) candidates.push_back(*rival);
    if (!options_.auto_only) {
      best = bench.best(backend_, cell.data == "integer", hopeless, *automatic, plan, candidates);
      if (!best) {
        ++unsupported_;
        return;
      }
    }
    timings_.add_cell(cell.key(device_), candidates, *automatic, plan);
    const size_t skipped = best ? remember_capped(cell, candidates, best->ms) : 0;
    if (table_ && best)
      table_->put(plan_table_row(device_, p.metric, cell.data == "integer", cell.n, cell.q, cell.d, cell.k,
                                 best->distance, best->select, best->ms));
    save();
    ++measured_;
    // Auto-only lines name the pair Auto resolved to, with no best time or ratio.
    const double ratio = best ? automatic->ms / best->ms : 0;
    char best_ms[32] = "-", ratio_text[32] = "-";
    if (best) {
      std::snprintf(best_ms, sizeof best_ms, "%.3f", best->ms);
      std::snprintf(ratio_text, sizeof ratio_text, "%.2f", ratio);
    }
    std::printf("%-10s %-7s %8lld %6lld %4lld %5lld  %-16s %-16s %10s %10.3f %6s %8s %8s %4zu\n",
                cell.metric.c_str(), cell.data.c_str(), (long long)cell.n, (long long)cell.q, (long long)cell.d,
                (long long)cell.k, to_string(best ? best->distance : plan.distance).c_str(),
                to_string(best ? best->select : plan.select).c_str(), best_ms, automatic->ms, ratio_text,
                seconds(clock.seconds() * 1000).c_str(), seconds(forecast_ms).c_str(), skipped);
    std::fflush(stdout);
    if (ratio > worst_) {
      worst_ = ratio;
      worst_cell_ = cell.label();
    }
  }

  /// Keeps a measured cell's capped candidates for the larger cells' pruning; returns how many were skipped.
  size_t remember_capped(const SweepCell& cell, const std::vector<Timed>& candidates, double best_ms) {
    size_t skipped = 0;
    for (const Timed& t : candidates) {
      if (t.capped) capped_.add(cell, names_of({t.distance, t.select}), t.ms, best_ms);
      skipped += t.runs == 0;
    }
    skipped_ += skipped;
    return skipped;
  }

  /// Both files after every cell, each whole through a rename: a run killed at its time limit loses one cell at most.
  void save() const {
    if (table_) with_option("--out", [&] { table_->write(); });
    if (!options_.csv.empty()) with_option("--csv", [&] { write_whole(options_.csv, timings_.text()); });
  }

  static std::string seconds(double ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", ms / 1000);
    return text;
  }

  void print_summary() const {
    if (worst_ > 0) std::printf("worst        Auto / best = %.2f at %s\n", worst_, worst_cell_.c_str());
    if (table_) std::printf("table        %zu rows added or replaced in %s\n", table_->written(), options_.out.c_str());
    if (!options_.csv.empty())
      std::printf("timings      %zu rows of %zu cells in %s\n", timings_.rows(), timings_.cells(),
                  options_.csv.c_str());
    std::printf("cells        %zu measured now, %zu from earlier runs, %zu left", measured_, timings_.resumed_cells(),
                left_);
    if (unsupported_ > 0) std::printf(", %zu that no pair serves", unsupported_);
    std::printf(" (%.1f s)\n", elapsed_.seconds());
    if (skipped_ > 0)
      std::printf("hopeless     %zu candidates skipped (capped in a smaller cell: not run, recorded with runs 0 and "
                  "an estimate; --sweep-no-prune runs them)\n",
                  skipped_);
    if (left_ == 0) return;
    std::printf("budget       %g s reached; first cell left: %s\n", options_.budget_s, first_left_.c_str());
    if (measured_ == 0 && cheapest_left_ms_ > options_.budget_s * 1000)  // another run of this command would stall
      std::printf("budget       no cell left fits in %g s, the cheapest is %s: give --sweep-budget more\n",
                  options_.budget_s, cheapest_left_.c_str());
    std::printf("continue     %s\n", continue_command().c_str());
  }

  /// This very command, resumed: the same grid and files, measuring only what is left.
  std::string continue_command() const {
    std::vector<std::string> words = command_line();
    if (words.empty()) return "the same gknn bench --sweep command with --resume";
    if (std::find(words.begin(), words.end(), "--resume") == words.end()) words.push_back("--resume");
    return shell_line(words);
  }

  Stopwatch elapsed_;  // first: the budget counts the device's initialisation too
  const SweepOptions& options_;
  const SearchParams& params_;
  int warmup_, repeat_;
  std::map<std::string, Pair> best_pairs_;  ///< --sweep-best-from's fastest pair per cell
  Backend backend_;
  std::string device_;
  TimingsCsv timings_;
  std::optional<PlanTableFile> table_;
  CostModel cell_costs_, group_costs_;
  CappedPairs capped_;
  size_t measured_ = 0, left_ = 0, unsupported_ = 0, skipped_ = 0;
  std::string first_left_, cheapest_left_;
  double cheapest_left_ms_ = kNoLimit;
  double worst_ = 0;
  std::string worst_cell_;
};

}  // namespace

void SweepOptions::add_to(CLI::App& app) {
  app.add_flag("--sweep", enabled,
               "measure every distance/selection pair on a grid and print the fastest per cell (no --base/--query)");
  CLI::Option* out_option = app.add_option("--out", out,
                                           "with --sweep: add the plan table rows to this file (src/plan/plan_table.csv); a re-measured cell "
                                           "replaces its row");
  CLI::Option* csv_option =
      app.add_option("--csv", csv, "with --sweep: write every timing (each candidate pair and Auto, per cell) here");
  app.add_flag("--resume", resume,
               "with --sweep: keep the complete cells of the --csv file (and their --out rows) and measure only the "
               "others")
      ->needs(csv_option);
  app.add_option("--sweep-budget", budget_s,
                 "with --sweep: seconds; no cell starts whose forecast would end past them (then the command that "
                 "goes on is printed; the last one given counts)")
      ->check(non_negative())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)  // a printed continue command takes another budget
      ->needs(csv_option);
  app.add_option("--sweep-cap", cap,
                 "with --sweep: a candidate whose first call takes more than this factor times the cell's best so far "
                 "(Auto's, timed first, included) is timed once and flagged capped (Auto never is; 0: every candidate)")
      ->check(non_negative())
      ->capture_default_str();
  app.add_flag_callback(
      "--sweep-no-prune", [this] { prune = false; },
      "with --sweep: time also the candidates capped in a smaller cell (same n, d, k and a smaller q, or same q, d, "
      "k and a smaller n); by default they are skipped as hopeless (runs 0 in --csv)");
  app.add_option("--sweep-hopeless", hopeless_loss,
                 "with --sweep: a candidate capped in a smaller cell is skipped only when it lost there by at least "
                 "this factor to that cell's fastest pair (0: whenever it was capped; the last one given counts)")
      ->check(non_negative())
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  app.add_option("--sweep-long-call-ms", long_call_ms,
                 "with --sweep: a pair whose warm-up call takes at least this many ms is timed once after it "
                 "(--repeat applies below; the grid's largest cells cost seconds a call)")
      ->check(non_negative())
      ->capture_default_str();
  CLI::Option* auto_only_option =
      app.add_flag("--sweep-auto-only", auto_only,
                   "with --sweep: time only Auto in each cell (the CSV holds its line alone): a re-check of Auto "
                   "against the best pairs of an earlier full sweep (bench/suite/report.py --auto-from); not with "
                   "--out")
          ->excludes(out_option);
  CLI::Option* best_from_option =
      app.add_option("--sweep-best-from", best_from,
                     "with --sweep-auto-only: a full sweep's --csv; only the cells it completed are measured, Auto and "
                     "the cell's fastest pair there timed again side by side (runs alternating), both lines written")
          ->needs(auto_only_option);
  app.add_option("--sweep-recheck-above", recheck_above,
                 "with --sweep-best-from: only the cells where Auto there took more than this factor times the "
                 "cell's fastest pair (1.1: those past the 10% the plan table judges by; 0: every cell)")
      ->needs(best_from_option)
      ->check(non_negative())
      ->capture_default_str();
  app.add_option("--sweep-n", n, "base rows of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-q", q, "query counts of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-d", d, "dimensions of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-k", k, "k of the grid")->delimiter(',')->capture_default_str();
  app.add_option("--sweep-metrics", metrics, "metrics (one per class: squared_l2, l1, linf, lp)")
      ->delimiter(',')
      ->check(name_check([](const std::string& s) { parse_metric(s); }, "METRIC"))
      ->capture_default_str();
  app.add_option("--sweep-data", data, "data kinds: integer (0..255) and/or float (uniform [0, 1))")
      ->delimiter(',')
      ->check(CLI::IsMember({"integer", "float"}))
      ->capture_default_str();
}

int run_sweep(const SweepOptions& sweep, const SearchParams& params, int warmup, int repeat) {
  return Sweep(sweep, params, warmup, repeat).run();
}

}  // namespace gknn::cli
