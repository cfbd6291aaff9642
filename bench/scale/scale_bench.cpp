// scale_bench.cpp: the cost of each stage of a sharded / replicated search on one device, and a model of the
// efficiency on P devices or hosts (issue 17); with --devices or under mpirun, the real multi-device run
// against one device of the same machine (issue 18).
//
//   gknn_scale_bench [--rows N] [--dim D] [--queries Q] [--k 10,100,1000] [--float] [--backend B]
//                    [--distance NAME] [--parts 2,4,8] [--link-gbps G] [--reps R]
//                    [--devices 0,1 [--replicate]] [--crowded] [--csv FILE] [--md FILE]
//   mpirun -n P gknn_scale_bench ... : P ranks, one device each (host rank % visible devices)
//
// Model (sharded, P parts of N/P rows each): T_P = T_shard(N/P) + T_merge(P) + T_comm(P), where T_shard is
// measured as a ShardedIndex's device runs it (one shard's search of all Q queries in key form, query upload and
// result download included), T_merge is the measured host side after the shards (the k-way merge of P lists of
// Q x k into the first one, then the in-place finalisation), and T_comm the MPI traffic over a link of
// --link-gbps (queries broadcast, (P-1) Q k (4+8) bytes gathered); T_comm = 0 for P devices of one process,
// whose downloads are part of T_shard. Replicated: T_P = T(Q/P queries on N rows). Efficiency = T_1 / (P T_P),
// T_1 = Index::search on the whole base. Each search has the device to itself (as on P devices); the stage costs
// (SearchStats) of every search go to a second table.
// Data: uniform uint8 values (float32 with --float), a hash of (row, column): a rank makes only its rows.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "gknn/sharded_index.hpp"
#include "core/finalize.hpp"
#include "shard/merge.hpp"
#include "shard/sharded_keys.hpp"
#ifdef GKNN_HAS_MPI
#include "gknn/mpi.hpp"
#endif

namespace {

using namespace gknn;

struct Args {
  int64_t rows = 10'000'000, dim = 128, queries = 10'000;
  std::vector<int64_t> ks{10, 100, 1000};
  std::vector<int64_t> parts{2, 4, 8};
  bool float_data = false;
  Backend backend = Backend::Auto;
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  double link_gbps = 25.0;  // InfiniBand HDR-class link per host, GB/s
  int reps = 3;
  std::string devices;  // real one-process run
  bool replicate = false;
  bool crowded = false;  // also a shard searched beside the whole base's index (how the model measured until 2026-11-24)
  std::string csv = "bench/results/scale.csv", md = "bench/results/scale.md";
};

std::vector<int64_t> parse_list(const char* text) {
  std::vector<int64_t> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    out.push_back(std::strtoll(p, &end, 10));
    if (end == p || out.back() <= 0) throw Error(ErrorCode::InvalidArgument, std::string("bad list '") + text + "'");
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw Error(ErrorCode::InvalidArgument, opt + " needs a value");
      return argv[++i];
    };
    if (opt == "--rows") a.rows = parse_list(value())[0];
    else if (opt == "--dim") a.dim = parse_list(value())[0];
    else if (opt == "--queries") a.queries = parse_list(value())[0];
    else if (opt == "--k") a.ks = parse_list(value());
    else if (opt == "--parts") a.parts = parse_list(value());
    else if (opt == "--float") a.float_data = true;
    else if (opt == "--backend") a.backend = parse_backend(value());
    else if (opt == "--distance") a.distance = parse_distance(value());
    else if (opt == "--link-gbps") a.link_gbps = std::atof(value());
    else if (opt == "--reps") a.reps = int(parse_list(value())[0]);
    else if (opt == "--devices") a.devices = value();
    else if (opt == "--replicate") a.replicate = true;
    else if (opt == "--crowded") a.crowded = true;
    else if (opt == "--csv") a.csv = value();
    else if (opt == "--md") a.md = value();
    else throw Error(ErrorCode::InvalidArgument, "unknown option " + opt + " (see the comment at the top of "
                                                 "bench/scale/scale_bench.cpp)");
  }
  return a;
}

/// Rows [first, first + count) of the benchmark's data set `seed`: a hash of (row, column), so any process
/// can make any rows. uint8 values as floats, or uniform floats in [0, 1).
std::vector<float> make_rows(int64_t first, int64_t count, int64_t dim, uint64_t seed, bool float_data) {
  std::vector<float> out(size_t(count * dim));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count * dim; ++i) {
    uint64_t z = (uint64_t(first * dim + i) + seed * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    z ^= z >> 29;
    out[size_t(i)] = float_data ? float(z >> 40) * 0x1p-24f : float(z & 255);
  }
  return out;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Median wall time of `reps` calls after one warm-up; the last result in *last.
template <class F>
double median_ms(int reps, F&& f, Result* last = nullptr) {
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double start = now_ms();
    Result res = f();
    t.push_back(now_ms() - start);
    if (last) *last = std::move(res);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

SearchParams params_of(const Args& a, int64_t k, int device) {
  SearchParams p;
  p.k = k;
  p.backend = a.backend;
  p.distance = a.distance;
  p.device = device;
  return p;
}

bool identical(const Result& a, const Result& b) {
  return a.indices == b.indices && a.distances.size() == b.distances.size() &&
         std::memcmp(a.distances.data(), b.distances.data(), a.distances.size() * sizeof(float)) == 0;
}

/// The host side after the shards, as ShardedIndex::search runs it: the k-way merge of P lists of Q x k (the shard's
/// lists with shifted indices) into the first list's storage, then the in-place finalisation. Median, min and max
/// ms of `reps` calls after one warm-up (the spread says how much the host's noise weighs in the model).
struct HostSide {
  int64_t k, parts;
  int reps;
  double median_ms, min_ms, max_ms;
};

HostSide host_side(const Result& shard, int64_t parts, int64_t k, int reps) {
  std::vector<std::vector<int64_t>> indices(size_t(parts), std::vector<int64_t>(shard.indices.begin(), shard.indices.end()));
  std::vector<detail::KeyListsView> views;
  for (int64_t p = 0; p < parts; ++p) {
    for (int64_t& i : indices[size_t(p)]) i += p * (1 << 30);
    views.push_back({shard.distances.data(), indices[size_t(p)].data(), shard.rows, shard.k});
  }
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {  // the first one warms up
    Result out = shard;                // the first part's lists, which the merge overwrites
    views[0] = detail::lists_of(out);
    const double start = now_ms();
    detail::merge_key_lists_into(views, shard.rows, shard.k, 0, out.distances.data(), out.indices.data());
    const Result done = detail::finalize(std::move(out), Metric::SquaredL2, 2.0, k);
    (void)done;
    if (r > 0) t.push_back(now_ms() - start);
  }
  std::sort(t.begin(), t.end());
  return {k, parts, reps, t[t.size() / 2], t.front(), t.back()};
}

void write_host_side(std::ostream& md, const std::vector<HostSide>& rows) {
  if (rows.empty()) return;
  md << "\n## Host merge + finalisation after the shards (ms)\n\n| k | P | calls | median | min | max |\n"
     << "|---:|---:|---:|---:|---:|---:|\n";
  char line[256];
  for (const HostSide& h : rows) {
    std::snprintf(line, sizeof line, "| %lld | %lld | %d | %.2f | %.2f | %.2f |\n", (long long)h.k,
                  (long long)h.parts, h.reps, h.median_ms, h.min_ms, h.max_ms);
    md << line;
    std::fputs(line, stdout);
  }
}

struct Row {
  std::string mode;  // sharded / replicated, model / measured
  int64_t k, parts;
  double t1_ms, part_ms, merge_ms, comm_ms, predicted_ms, efficiency;
  std::string note;
};

/// The phases of one search (SearchStats of a call after the timed ones): where a shard's time goes.
struct StageRow {
  std::string search;  // whole base, shard N/P, Q/P queries
  int64_t rows, queries, k;
  double wall_ms;
  SearchStats s;
};

void write_stages(std::ostream& md, const std::vector<StageRow>& stages) {
  if (stages.empty()) return;
  md << "\n## Stage costs of one search (device 0; the phases of one call after the timed ones)\n\n"
     << "wall: the median of the timed calls. check, setup: host work before the device span; device: first upload "
        "to last download (events); after: wall - check - setup - device (the host after the device span). tiles: "
        "query x base tiles. tile merge: a pipeline's merges of base tiles, and for a ShardedIndex also the host's "
        "merge of the shards' lists. guard (float data): K' of the first pass (0: not guarded), queries searched again "
        "(summed over the shards), rerank: the guard's wall time after its first pass.\n\n"
     << "| search | rows | queries | k | wall ms | check | setup | upload | distance | select | tile merge | "
        "finalize | download | device | after | tiles | guard K' | retried | rerank ms |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n";
  char line[640];
  for (const StageRow& r : stages) {
    const SearchStats& s = r.s;
    std::snprintf(line, sizeof line,
                  "| %s | %lld | %lld | %lld | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | "
                  "%.2f | %lld x %lld | %lld | %lld | %.2f |\n",
                  r.search.c_str(), (long long)r.rows, (long long)r.queries, (long long)r.k, r.wall_ms, s.check_ms,
                  s.setup_ms, s.upload_ms, s.distance_ms, s.select_ms, s.merge_ms, s.finalize_ms, s.download_ms,
                  s.device_ms, s.total_ms - s.check_ms - s.setup_ms - s.device_ms, (long long)s.query_tiles,
                  (long long)s.base_tiles, (long long)s.guard_candidates, (long long)s.guard_retried, s.rerank_ms);
    md << line;
    std::fputs(line, stdout);
  }
}

void write(const Args& a, const std::vector<Row>& rows, const std::vector<StageRow>& stages,
           const std::vector<HostSide>& host, const std::string& device) {
  std::ofstream csv(a.csv);
  csv << "mode,k,parts,t1_ms,part_ms,merge_ms,comm_ms,total_ms,efficiency,note\n";
  for (const Row& r : rows)
    csv << '"' << r.mode << "\"," << r.k << ',' << r.parts << ',' << r.t1_ms << ',' << r.part_ms << ',' << r.merge_ms << ','
        << r.comm_ms << ',' << r.predicted_ms << ',' << r.efficiency << ",\"" << r.note << "\"\n";  // text fields quoted: they hold commas
  std::ofstream md(a.md);
  md << "# Scale-out: stage costs and efficiency (gknn_scale_bench)\n\n"
     << "Device: " << device << ". Base " << a.rows << " x " << a.dim << (a.float_data ? " float32" : " uint8")
     << ", " << a.queries << " queries, median of " << a.reps << ". Link for the MPI model: " << a.link_gbps
     << " GB/s.\n\n"
     << "| mode | k | P | T1 ms | part ms | merge ms | comm ms | T_P ms | efficiency | note |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  char line[512];
  for (const Row& r : rows) {
    std::snprintf(line, sizeof line, "| %s | %lld | %lld | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f%% | %s |\n",
                  r.mode.c_str(), (long long)r.k, (long long)r.parts, r.t1_ms, r.part_ms, r.merge_ms, r.comm_ms,
                  r.predicted_ms, 100 * r.efficiency, r.note.c_str());
    md << line;
    std::fputs(line, stdout);
  }
  write_stages(md, stages);
  write_host_side(md, host);
}

/// An Index (CUDA device 0 or the CPU: pick the device with CUDA_VISIBLE_DEVICES) of rows [first, first+count).
Index make_index(const Args& a, int64_t first, int64_t count) {
  Index index(a.dim, Metric::SquaredL2, a.backend);
  const std::vector<float> rows = make_rows(first, count, a.dim, 1, a.float_data);
  index.add(FloatView{rows.data(), count, a.dim, 0});
  return index;
}

/// Median wall time of `call(nullptr)` (stats off; the last result in *last), then one more call(&stats) whose
/// phases go into `stages` as `what`; a call that fills no total_ms (a search in key form) gets its wall time,
/// taken before its result is freed, as Index::search's own total_ms is.
template <class Call>
double stage_row(const Args& a, const std::string& what, int64_t rows, int64_t queries, int64_t k, Call&& call,
                 std::vector<StageRow>& stages, Result* last = nullptr) {
  const double ms = median_ms(a.reps, [&] { return call(nullptr); }, last);
  SearchStats stats;
  const double start = now_ms();
  const Result r = call(&stats);
  if (stats.total_ms == 0) stats.total_ms = now_ms() - start;
  stages.push_back({what, rows, queries, k, ms, stats});
  return ms;
}

/// params_of(a, k, 0) with its stats pointer set.
SearchParams with_stats(const Args& a, int64_t k, SearchStats* stats) {
  SearchParams p = params_of(a, k, 0);
  p.stats = stats;
  return p;
}

/// Median wall time of a search of `index` (stats off), then one more call whose phases go into `stages`.
double timed_search(const Args& a, const Index& index, FloatView q, int64_t k, const std::string& what,
                    std::vector<StageRow>& stages, Result* last = nullptr) {
  return stage_row(
      a, what, index.size(), q.rows, k, [&](SearchStats* st) { return index.search(q, with_stats(a, k, st)); },
      stages, last);
}

/// A ShardedIndex's search in key form with global indices (ShardedAccess::search_keys): as each device of a
/// sharded search runs its part (the host merge and finalisation come after).
Result shard_keys(const ShardedIndex& index, FloatView q, const SearchParams& params) {
  return detail::ShardedAccess::search_keys(index, q, detail::ShardedAccess::checked_params(index, params));
}

/// One shard's part of a sharded search (shard_keys of a one-shard index; host_side times the rest).
double timed_shard(const Args& a, const ShardedIndex& shard, FloatView q, int64_t k, const std::string& what,
                   std::vector<StageRow>& stages, Result* last) {
  return stage_row(
      a, what, shard.size(), q.rows, k, [&](SearchStats* st) { return shard_keys(shard, q, with_stats(a, k, st)); },
      stages, last);
}

/// The stage costs on one device and the model for every P (issue 17). Every search has the device to itself,
/// as each of P devices would: an Index keeps its tile buffers (sized from the free memory) between searches, so
/// the whole base's index is dropped before the shards are made, and each shard's before the next one.
void model(const Args& a, const std::vector<float>& queries, std::vector<Row>& out, std::vector<StageRow>& stages,
           std::vector<HostSide>& host) {
  const FloatView q{queries.data(), a.queries, a.dim, 0};
  std::map<int64_t, double> t1;                              // k -> whole base, all queries
  std::map<std::pair<int64_t, int64_t>, double> tr, ts, tm;  // (k, P) -> replicated part, shard, merge + finalise
  {
    const Index full = make_index(a, 0, a.rows);
    for (int64_t k : a.ks) {
      t1[k] = timed_search(a, full, q, k, "whole base (Index)", stages);
      std::printf("k=%lld: one device %.1f ms\n", (long long)k, t1[k]);
      for (int64_t parts : a.parts) {
        const FloatView qp{queries.data(), a.queries / parts, a.dim, 0};
        tr[{k, parts}] = timed_search(a, full, qp, k, "Q/" + std::to_string(parts) + " queries (Index)", stages);
      }
    }
    if (a.crowded && !a.parts.empty()) {  // stage rows only: the device's memory is not this shard's alone
      const int64_t parts = a.parts[0];
      ShardedIndex shard(a.dim, {ShardDevice{a.backend, 0}});
      const std::vector<float> rows = make_rows(0, a.rows / parts, a.dim, 1, a.float_data);
      shard.add(FloatView{rows.data(), a.rows / parts, a.dim, 0});
      for (int64_t k : a.ks)
        timed_shard(a, shard, q, k, "shard N/" + std::to_string(parts) + " beside the whole base's index", stages,
                    nullptr);
    }
  }
  for (int64_t parts : a.parts) {
    ShardedIndex shard(a.dim, {ShardDevice{a.backend, 0}});
    {
      const std::vector<float> rows = make_rows(0, a.rows / parts, a.dim, 1, a.float_data);
      shard.add(FloatView{rows.data(), a.rows / parts, a.dim, 0});
    }
    for (int64_t k : a.ks) {
      Result part;
      ts[{k, parts}] = timed_shard(a, shard, q, k, "shard N/" + std::to_string(parts) + " (keys)", stages, &part);
      host.push_back(host_side(part, parts, k, std::max(a.reps, 9)));
      tm[{k, parts}] = host.back().median_ms;
    }
  }
  for (int64_t k : a.ks)
    for (int64_t parts : a.parts) {
      const double s = ts[{k, parts}], m = tm[{k, parts}], r = tr[{k, parts}];
      const double gb = 1e-9 * double(a.queries) * double(std::min(k, a.rows / parts)) * 12.0 * double(parts - 1) +
                        1e-9 * double(a.queries * a.dim) * 4.0 * std::ceil(std::log2(double(parts)));
      const double c = 1e3 * gb / a.link_gbps;
      out.push_back({"sharded model, one process", k, parts, t1[k], s, m, 0, s + m, t1[k] / (parts * (s + m)), ""});
      out.push_back({"sharded model, MPI hosts", k, parts, t1[k], s, m, c, s + m + c,
                     t1[k] / (parts * (s + m + c)), ""});
      out.push_back({"replicated model", k, parts, t1[k], r, 0, 0, r, t1[k] / (parts * r), ""});
    }
  std::stable_sort(stages.begin(), stages.end(), [](const StageRow& x, const StageRow& y) { return x.k < y.k; });
  std::stable_sort(host.begin(), host.end(), [](const HostSide& x, const HostSide& y) { return x.k < y.k; });
}

/// The real run on --devices in one process: sharded or replicated ShardedIndex against device list[0]; then the
/// same calls in parts, both indexes resident (issue 18: where the parts' time goes): an Index of the whole base
/// (the model's T1), the one-device ShardedIndex in key form and whole, the multi-device one in key form and whole
/// (its stage columns are the slowest shard's).
void devices_run(const Args& a, const std::vector<float>& queries, std::vector<Row>& out,
                 std::vector<StageRow>& stages) {
  const std::vector<ShardDevice> shards = parse_devices(a.devices);
  const FloatView q{queries.data(), a.queries, a.dim, 0};
  const std::vector<float> base = make_rows(0, a.rows, a.dim, 1, a.float_data);
  const FloatView b{base.data(), a.rows, a.dim, 0};
  ShardedIndex one(a.dim, {shards[0]}), many(a.dim, shards, a.replicate ? ShardMode::Replicated : ShardMode::Sharded);
  one.add(b);
  many.add(b);
  const int64_t parts = int64_t(shards.size());
  for (int64_t k : a.ks) {
    Result r1, rp;
    SearchStats stats;
    SearchParams p = params_of(a, k, 0);
    const double t1 = median_ms(a.reps, [&] { return one.search(q, p); }, &r1);
    p.stats = &stats;
    const double tp = median_ms(a.reps, [&] { return many.search(q, p); }, &rp);
    out.push_back({std::string(a.replicate ? "replicated" : "sharded") + " measured, one process, devices " +
                       a.devices,
                   k, parts, t1, tp - stats.merge_ms, stats.merge_ms, 0, tp, t1 / (parts * tp),
                   identical(r1, rp) ? "identical" : "DIFFERS from one device"});
  }
  const Index whole = make_index(a, 0, a.rows);  // device 0 (CUDA_VISIBLE_DEVICES' first)
  for (int64_t k : a.ks) {
    const auto keys_of = [&](const ShardedIndex& index) {
      return [&a, &q, &index, k](SearchStats* st) { return shard_keys(index, q, with_stats(a, k, st)); };
    };
    stage_row(a, "whole base (Index), beside both", a.rows, a.queries, k,
              [&](SearchStats* st) { return whole.search(q, with_stats(a, k, st)); }, stages);
    stage_row(a, "one device (ShardedIndex), keys", a.rows, a.queries, k, keys_of(one), stages);
    stage_row(a, "one device (ShardedIndex)", a.rows, a.queries, k,
              [&](SearchStats* st) { return one.search(q, with_stats(a, k, st)); }, stages);
    stage_row(a, "devices " + a.devices + ", keys (slowest shard)", a.rows, a.queries, k, keys_of(many), stages);
    stage_row(a, "devices " + a.devices + " (slowest shard)", a.rows, a.queries, k,
              [&](SearchStats* st) { return many.search(q, with_stats(a, k, st)); }, stages);
  }
}

#ifdef GKNN_HAS_MPI
/// The real run under mpirun: ranks with one device each (host rank % visible devices) against rank 0's
/// device alone on the whole base.
void mpi_run(const Args& a, const std::vector<float>& queries, std::vector<Row>& out) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int host_rank = 0;
  MPI_Comm_rank(host, &host_rank);
  MPI_Comm_free(&host);
  const bool cuda = backend_available(Backend::Cuda) && a.backend != Backend::Cpu;
  const int devices = cuda ? int(cuda_devices().size()) : 1;
  const ShardDevice mine{cuda ? Backend::Cuda : Backend::Cpu, cuda ? host_rank % devices : 0};
  const FloatView q{queries.data(), a.queries, a.dim, 0};
  const mpi::RowRange range = a.replicate ? mpi::RowRange{0, a.rows} : mpi::rank_rows(a.rows, rank, ranks);
  const std::vector<float> rows = make_rows(range.begin, range.count(), a.dim, 1, a.float_data);
  mpi::DistributedIndex index(MPI_COMM_WORLD, a.dim, Metric::SquaredL2, {mine});
  ShardedIndex replica(a.dim, {mine});
  if (a.replicate) replica.add(FloatView{rows.data(), range.count(), a.dim, 0});
  else index.add(FloatView{rows.data(), range.count(), a.dim, 0});
  for (int64_t k : a.ks) {
    const SearchParams p = params_of(a, k, mine.device);
    Result rp;
    SearchStats stats;
    SearchParams ps = p;
    ps.stats = &stats;
    MPI_Barrier(MPI_COMM_WORLD);
    const double tp = median_ms(a.reps, [&] {
      MPI_Barrier(MPI_COMM_WORLD);
      return a.replicate ? mpi::replicated_search(replica, q, p, MPI_COMM_WORLD) : index.search(q, ps);
    }, &rp);
    if (rank != 0) continue;
    ShardedIndex one(a.dim, {mine});  // rank 0's device alone, whole base (after the parallel run)
    const std::vector<float> base = make_rows(0, a.rows, a.dim, 1, a.float_data);
    one.add(FloatView{base.data(), a.rows, a.dim, 0});
    Result r1;
    const double t1 = median_ms(a.reps, [&] { return one.search(q, p); }, &r1);
    out.push_back({std::string(a.replicate ? "replicated" : "sharded") + " measured, MPI ranks", k, ranks, t1,
                   tp - stats.merge_ms, stats.merge_ms, 0, tp, t1 / (ranks * tp),
                   identical(r1, rp) ? "identical" : "DIFFERS from one device"});
  }
}
#endif

std::string device_name(const Args& a) {
  if (a.backend == Backend::Cpu || !backend_available(Backend::Cuda)) return "CPU";
  const std::vector<DeviceInfo> d = cuda_devices();
  return d.empty() ? "CUDA" : d[0].name + " (" + std::to_string(d.size()) + " visible)";
}

}  // namespace

int main(int argc, char** argv) {
#ifdef GKNN_HAS_MPI
  const bool under_mpi = mpi::launched_by_mpirun();
  if (under_mpi) MPI_Init(&argc, &argv);
#else
  const bool under_mpi = false;
#endif
  int status = 0;
  try {
    const Args a = parse(argc, argv);
    const std::vector<float> queries = make_rows(0, a.queries, a.dim, 2, a.float_data);
    std::vector<Row> rows;
    std::vector<StageRow> stages;
    std::vector<HostSide> host;
    bool output = true;
#ifdef GKNN_HAS_MPI
    if (under_mpi) {
      mpi_run(a, queries, rows);
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      output = rank == 0;
    }
#endif
    if (!under_mpi && !a.devices.empty()) devices_run(a, queries, rows, stages);
    else if (!under_mpi) model(a, queries, rows, stages, host);
    if (output) write(a, rows, stages, host, device_name(a));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gknn_scale_bench: %s\n", e.what());
    status = 1;
  }
#ifdef GKNN_HAS_MPI
  if (under_mpi) MPI_Finalize();
#endif
  return status;
}
