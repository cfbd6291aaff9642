// upload_bench.cpp: what uploading a resident Index base costs, next to what the host and the link can do (issue 12,
// item 5: "the resident Index base uploads at >= 80% of the measured host->device bandwidth").
//
// Bases: 1M x 128 float32 (512 MB, the SIFT1M shape as floats), 1M x 128 uint8 (the same values as bytes,
// Index::add(ByteView): 128 MB cross the link, converted on the device) and 16384 x 128 float32 (8 MB: the fixed
// costs of an add). Per base, each a median of --reps after one warm-up:
//   pinned H2D    cudaMemcpyAsync of the base's bytes from a cudaHostAlloc buffer (the reference bandwidth)
//   pageable H2D  cudaMemcpy of the base's bytes from the caller's (malloc'd) memory
//   pack          parallel_memcpy (core/host_parallel) of the base into pinned memory, whole, and chunk by chunk into
//                 the upload's slots in turn (its chunk size and slot count: what the upload's host side does)
//   hostalloc     cudaHostAlloc + cudaFreeHost of one slot of the upload's chunk size (the per-add cost before)
//   slot pinned   one slot made as the uploads make theirs (mapped, its pages touched on the host team,
//                 cudaHostRegister; detail::cuda::time_pinned_slot) and freed
//   cudaMalloc    of the base's device rows (an add's reserve)
//   add           Index::add end to end on a fresh cuda Index (synchronised; the Index destroyed outside the
//                 timing), its GB/s of input bytes and its fraction of the pinned H2D of the same bytes; "first add"
//                 is the warm-up, the first add of the process for the first base (pinned slots not yet made);
//                 "add from pinned rows": the same rows in page-locked memory (copied where they are, no pack);
//                 "host pack beside add": the chunked pack timed right before each timed add (the host's memory
//                 changes from run to run and machine to machine: one H100 host packed at 20 GB/s, another at 80),
//                 and the add's GB/s over min(pinned H2D, that pack): how much of what the host allowed it reached
//                 "before": the add before this change, emulated with its parts (legacy_add_ms), and the speed-up
//   same          the uint8 Index answers 100 queries (k = 10) with the float Index's ids and distances, bit for bit
// Under the table, per base, where the first add's and the last timed add's host time went (the upload's phases,
// detail::cuda::last_upload_times: pinned slots made, packers started, device slots, when the first chunk was packed
// and its copy issued, the destination's cudaMalloc and the chunks copied into device slots beside it, the commit's
// wait for the device's last copies and work).
// Then the pack alone, both ways (core/chunk_pack's copy_rows with memcpy's stores and with streaming stores, on the
// host team's threads: the base whole, a part a thread, and in parts of <= 1 MiB taken in turn, as the upload's
// packers take them, into a ring of the upload's slots), and the adds both ways beside the add without the ramp of
// small chunks and the pinned H2D of the base as a 2-D copy of its rows (what the add from pinned rows issued before).
// Then cudaHostRegister of the float base (register + copy + unregister: the pack's alternative for one large
// contiguous add), and the sweep of the upload's chunking on the 512 MB float base (hooks.hpp set_upload_override:
// chunk MiB x slots, write-combined slots, and small rings packed with memcpy's stores, which may stay in the host's
// last-level cache) to choose the defaults of pipeline/upload.cu.
//
// Then the timeline of one add per kind (float32 and uint8, pageable and from page-locked rows: CUDA events around
// each chunk's copy and device work, host time points of the add's phases; detail::cuda::set_upload_timeline) and the
// add's copies alone into a kept buffer and into one cudaMalloc'd right after a cudaFree (as the adds here follow
// the previous Index's free): where an add from page-locked rows spends the ~1.2 ms beyond its copies.
//
//   gknn_upload_bench [--reps N] [--md FILE] [--no-sweep] [--pack-only] [--timeline-only]
// --pack-only: the pack table alone, into pageable memory (touched first), without CUDA (runs on hosts without a GPU).
// --timeline-only: the 512 MiB reference and the timeline section alone.
// The tables go to stdout and to --md FILE, else $OUT/upload_bench.md when OUT is set (scripts/device-check.sh).
// GKNN_INDEX_POOL=0: the adds' rows cudaMalloc'd instead of taken from gknn's device pool (the header says which).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "core/chunk_pack.hpp"
#include "core/host_parallel.hpp"
#include "cuda/hooks.hpp"
#include "cuda/pipeline/staging.cuh"
#include "cuda/pipeline/upload.cuh"
#include "core/validate.hpp"
#include "gknn/index.hpp"

namespace {

using namespace gknn;
using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gknn_upload_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// Each step of the bench on stderr with the seconds since the start, so a run that stalls names the step it stalled
/// in (stdout keeps the tables).
void step(const std::string& what) {
  static const Clock::time_point start = Clock::now();
  std::fprintf(stderr, "[upload_bench %8.3f s] %s\n", ms_since(start) / 1e3, what.c_str());
  std::fflush(stderr);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Median wall time in ms of `reps` calls of f after one warm-up (whose time goes to *first when asked).
double timed(int reps, const std::function<void()>& f, double* first = nullptr) {
  check(cudaDeviceSynchronize(), "sync");
  Clock::time_point t0 = Clock::now();
  f();
  check(cudaDeviceSynchronize(), "sync");
  if (first) *first = ms_since(t0);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    t0 = Clock::now();
    f();
    check(cudaDeviceSynchronize(), "sync");
    ms.push_back(ms_since(t0));
  }
  return median(ms);
}

double gbps(size_t bytes, double ms) { return ms > 0 ? bytes / (ms * 1e6) : 0; }

/// Median ms of `reps` host-to-device copies of `bytes` from `src` (pinned or not) on `stream`, each synchronised.
double timed_h2d(int reps, void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  return timed(reps, [&] {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "copy");
    check(cudaStreamSynchronize(stream), "sync");
  });
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

struct PinnedHost {
  void* p = nullptr;
  explicit PinnedHost(size_t bytes) {
    check(cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocDefault), "cudaHostAlloc");
  }
  ~PinnedHost() { cudaFreeHost(p); }
};

struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(size_t bytes) { check(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc"); }
  ~DeviceMem() { cudaFree(p); }
};

struct Base {
  std::string name;
  int64_t rows, cols;
  bool bytes;  ///< uint8 rows (Index::add(ByteView)), else float32
  const void* data;
  size_t size() const { return static_cast<size_t>(rows * cols) * (bytes ? 1 : sizeof(float)); }
  void add_to(Index& index) const {
    if (bytes) index.add(ByteView{static_cast<const uint8_t*>(data), rows, cols, 0});
    else index.add(FloatView{static_cast<const float*>(data), rows, cols, 0});
  }
};

struct Options {
  int reps = 5;
  std::string md;
  bool sweep = true;
  bool pack_only = false;
  bool timeline_only = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) o.reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--md" && i + 1 < argc) o.md = argv[++i];
    else if (a == "--no-sweep") o.sweep = false;
    else if (a == "--pack-only") o.pack_only = true;
    else if (a == "--timeline-only") o.timeline_only = true;
    else {
      std::fprintf(stderr,
                   "usage: gknn_upload_bench [--reps N] [--md FILE] [--no-sweep] [--pack-only] [--timeline-only]\n");
      std::exit(2);
    }
  }
  if (o.md.empty())
    if (const char* out = std::getenv("OUT"); out && *out) o.md = std::string(out) + "/upload_bench.md";
  return o;
}

/// Index::add of `b` on a fresh cuda Index, timed; the Index is destroyed outside the timing.
double add_ms(const Base& b) {
  check(cudaDeviceSynchronize(), "sync");
  Index index(b.cols, Metric::SquaredL2, Backend::Cuda);
  const Clock::time_point t0 = Clock::now();
  b.add_to(index);
  check(cudaDeviceSynchronize(), "sync");
  return ms_since(t0);
}

/// What Index::add did before the kept slots (emulated with the same parts, norms left out): a uint8 base converted
/// to floats on the host (what the Python layer does), the host value scan, the rows' cudaMalloc, then a Stager
/// with two fresh 32 MiB pinned slots (cudaMallocHost, freed at the end) packing and copying 32 MiB chunks.
double legacy_add_ms(const Base& b, cudaStream_t s) {
  using gknn::detail::cuda::Stager;
  check(cudaDeviceSynchronize(), "sync");
  const Clock::time_point t0 = Clock::now();
  std::vector<float> converted;
  const float* data = static_cast<const float*>(b.data);
  if (b.bytes) {
    converted.resize(static_cast<size_t>(b.rows * b.cols));
    const auto* src = static_cast<const uint8_t*>(b.data);
    const int parts = gknn::detail::host_team();
    const size_t per = (converted.size() + parts - 1) / parts;
    gknn::detail::host_parallel(parts, [&](int part) {
      for (size_t i = part * per; i < std::min(converted.size(), (part + 1) * per); ++i) converted[i] = src[i];
    });
    data = converted.data();
  }
  const FloatView rows{data, b.rows, b.cols, 0};
  (void)gknn::detail::validate_matrix(rows, "Index::add vectors", true);
  float* dst = nullptr;
  check(cudaMalloc(&dst, static_cast<size_t>(b.rows * (b.cols + 1)) * sizeof(float)), "cudaMalloc");
  {
    const int64_t chunk = std::min<int64_t>(b.rows, std::max<int64_t>(1, (int64_t(32) << 20) / (b.cols * 4)));
    Stager<float> stager(data, b.cols, b.cols, chunk, s, nullptr);
    for (int64_t r0 = 0; r0 < b.rows; r0 += chunk) {
      stager.upload_into(dst + r0 * b.cols, r0, std::min(chunk, b.rows - r0), s);
      stager.release(s);
    }
    check(cudaStreamSynchronize(s), "sync");
  }
  const double ms = ms_since(t0);
  check(cudaFree(dst), "cudaFree");
  return ms;
}

double median_legacy_add_ms(const Base& b, cudaStream_t s, int reps) {
  (void)legacy_add_ms(b, s);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) ms.push_back(legacy_add_ms(b, s));
  return median(ms);
}

/// The base packed as the upload packs it, timed: chunk by chunk of the upload's chunking into `slots` (pinned,
/// cut.slots x cut.chunk_bytes) in turn, each chunk by parallel_memcpy on the host team. What the host's memory
/// allows the pack (no copy engine reading beside it).
double chunked_pack_ms(const Base& b, unsigned char* slots, const gknn::detail::cuda::UploadChunking& cut) {
  const size_t size = b.size(), chunk = cut.chunk_bytes;
  const Clock::time_point t0 = Clock::now();
  for (size_t at = 0, i = 0; at < size; at += chunk, ++i)
    gknn::detail::parallel_memcpy(slots + (i % static_cast<size_t>(cut.slots)) * chunk,
                                  static_cast<const char*>(b.data) + at, std::min(chunk, size - at));
  return ms_since(t0);
}

struct AddTimes {
  double add = 0;    ///< median ms of an add
  double first = 0;  ///< ms of the warm-up add
  double host = 0;   ///< median ms of `beside`, run before each timed add (0 without it)
  gknn::detail::cuda::UploadTimes first_upload, last_upload;  ///< of the warm-up add's upload, of the last add's
  double last = 0;   ///< ms of the last add
};

/// Adds of `b` (one warm-up, then `reps` timed), each timed add right after one run of `beside` (the host's pack
/// rate at that moment: the report's "what the host allowed").
AddTimes time_adds(const Base& b, int reps, const std::function<double()>& beside = {}) {
  AddTimes t;
  step("  " + b.name + ": first add");
  t.first = add_ms(b);
  t.first_upload = gknn::detail::cuda::last_upload_times();
  std::vector<double> add, host;
  for (int r = 0; r < reps; ++r) {
    if (beside) host.push_back(beside());
    step("  " + b.name + ": add " + std::to_string(r + 1) + " of " + std::to_string(reps));
    add.push_back(add_ms(b));
  }
  t.last = add.back();
  t.last_upload = gknn::detail::cuda::last_upload_times();
  t.add = median(add);
  if (!host.empty()) t.host = median(host);
  return t;
}

double median_add_ms(const Base& b, int reps) { return time_adds(b, reps).add; }

/// Median wall ms of `reps` calls of f after one warm-up, host only.
double host_timed(int reps, const std::function<void()>& f) {
  f();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const Clock::time_point t0 = Clock::now();
    f();
    ms.push_back(ms_since(t0));
  }
  return median(ms);
}

/// The pack of `rows` both ways on the host team (host_team() threads, the caller's included), median ms:
/// [0] whole, memcpy; [1] whole, streaming (a contiguous part of the rows a thread, into `whole`: the base's bytes);
/// [2] parts, memcpy; [3] parts, streaming (parts of <= 1 MiB of whole rows taken in turn from a shared counter, as
/// the upload's packers take them, part i into `ring` at (i mod the ring's parts) x the part's bytes: the upload's
/// slots, 4 x 16 MiB, written over and over). A thread may write a part of the ring while another writes the same
/// bytes a ring later: the bytes are thrown away, only the time counts.
std::vector<double> pack_both_ways(const gknn::detail::HostRows& rows, unsigned char* whole, unsigned char* ring,
                                   size_t ring_bytes, int reps) {
  using gknn::detail::copy_rows;
  const int threads = gknn::detail::host_team();
  const int64_t part_rows = std::max<int64_t>(1, static_cast<int64_t>((size_t(1) << 20) / rows.row_bytes));
  const size_t part_bytes = static_cast<size_t>(part_rows) * rows.row_bytes;
  const int64_t parts = (rows.rows + part_rows - 1) / part_rows;
  const int64_t ring_parts = std::max<int64_t>(1, static_cast<int64_t>(ring_bytes / part_bytes));
  std::vector<double> ms;
  for (bool streaming : {false, true})
    ms.push_back(host_timed(reps, [&] {
      gknn::detail::host_parallel(threads, [&](int t) {
        const int64_t begin = rows.rows * t / threads, end = rows.rows * (t + 1) / threads;
        copy_rows(whole + static_cast<size_t>(begin) * rows.row_bytes, rows, begin, end - begin, streaming);
      });
    }));
  for (bool streaming : {false, true})
    ms.push_back(host_timed(reps, [&] {
      std::atomic<int64_t> next{0};
      gknn::detail::host_parallel(threads, [&](int) {
        for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < parts;) {
          const int64_t first = i * part_rows;
          copy_rows(ring + static_cast<size_t>(i % ring_parts) * part_bytes, rows, first,
                    std::min(part_rows, rows.rows - first), streaming);
        }
      });
    }));
  return ms;
}

/// One row of the pack table: GB/s both ways and streaming's gain, whole and in parts.
std::string pack_row(const std::string& name, size_t bytes, const std::vector<double>& ms) {
  auto g = [&](double m) { return fmt("%.1f", gbps(bytes, m)); };
  return "| " + name + " | " + fmt("%.1f", bytes / 1e6) + " | " + g(ms[0]) + " | " + g(ms[1]) + " | " +
         fmt("%.2fx", ms[0] / ms[1]) + " | " + g(ms[2]) + " | " + g(ms[3]) + " | " + fmt("%.2fx", ms[2] / ms[3]) + " |";
}

const char* kPackHead =
    "| base | MB | whole, memcpy GB/s | whole, streaming GB/s | gain | 1 MiB parts, memcpy GB/s | "
    "1 MiB parts, streaming GB/s | gain |";
const char* kPackRule = "|---|---|---|---|---|---|---|---|";
constexpr size_t kRingBytes = size_t(64) << 20;  ///< the upload's 4 slots of 16 MiB

/// Where an add's host time went (its upload's phases: gknn::detail::cuda::UploadTimes), in one line.
std::string add_breakdown(double add, const gknn::detail::cuda::UploadTimes& u) {
  auto f = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return std::string(b);
  };
  std::string l = f(add) + " ms = upload made " + f(u.construct_ms);
  if (u.pinned_blocks > 0) {
    l += " (pinned " + f(u.pinned_bytes / 1048576.0) + " MiB in " + std::to_string(u.pinned_blocks) + " slots: " +
         f(u.pin_ms) + " = pages touched " + f(u.touch_ms) + " + cudaHostRegister " + f(u.register_ms);
    if (u.hostalloc_ms > 0 || u.register_failures > 0)
      l += " + cudaHostAlloc " + f(u.hostalloc_ms) + " (" + std::to_string(u.register_failures) + " registers failed)";
    l += ";";
  } else {
    l += " (slots kept;";
  }
  l += " packers started " + f(u.packers_ms) + ", " + std::to_string(u.threads_created) + " threads made)";
  l += " + run " + f(u.run_ms) + " (device slots " + f(u.device_slots_ms) + ", first chunk packed at " +
       f(u.first_packed_ms) + " and issued at " + f(u.first_issued_ms) + ", destination made in " + f(u.prepare_ms) +
       (u.prepare_beside ? " on the helper beside " + std::to_string(u.early_chunks) + " chunks (" +
                               f(u.early_bytes / 1048576.0) + " MiB) into device slots, waited " +
                               f(u.prepare_wait_ms)
                         : std::string(" by the caller")) +
       ")";
  // After run: the commit (the device's last copies and work waited for, the facts read), then the rest (the add's
  // start before the upload was made, its return, the bench's cudaDeviceSynchronize).
  const double rest = add - u.total_ms;
  if (u.commit_ms >= 0)
    l += " + commit (last copies and device work, scan) " + f(u.commit_ms) + " + the rest (add start and return, sync) " +
         f(rest - u.commit_ms);
  else
    l += " + the rest (upload start, scan, commit, sync) " + f(rest);
  l += "; " + std::to_string(u.chunks) + " chunks, " + std::to_string(u.slots) + " slots of " +
       f(u.slot_bytes / 1048576.0) + " MiB" + (u.packers ? "" : ", packed by the caller") +
       (u.streaming ? ", streaming stores" : "");
  return l;
}

// --- The timeline of one add (issue 12: the ~1.2 ms an add from page-locked rows costs beyond its copies) ---

using gknn::detail::cuda::UploadTimeline;

/// One add with its upload's timeline, and the add's own host time points.
struct TimedAdd {
  UploadTimeline t;
  Clock::time_point entry, returned, synced;
};

/// Index::add of `b` on a fresh cuda Index with the upload's timeline recorded (detail::cuda::set_upload_timeline),
/// after one untimed add with it (its events made; that Index freed right before the timed add, as between the
/// table's adds), and `rest_ms` asleep after that free (0: none).
TimedAdd timeline_add(const Base& b, int rest_ms) {
  gknn::detail::cuda::set_upload_timeline(true);
  (void)add_ms(b);
  (void)gknn::detail::cuda::take_upload_timeline();
  if (rest_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(rest_ms));
  check(cudaDeviceSynchronize(), "sync");
  TimedAdd r;
  {
    Index index(b.cols, Metric::SquaredL2, Backend::Cuda);
    r.entry = Clock::now();
    b.add_to(index);
    r.returned = Clock::now();
    check(cudaDeviceSynchronize(), "sync");
    r.synced = Clock::now();
    r.t = gknn::detail::cuda::take_upload_timeline();
  }
  gknn::detail::cuda::set_upload_timeline(false);
  return r;
}

/// The add's timeline in ms since its entry: a summary line (host phases; the copies' span, busy time and gaps; the
/// tail after the last copy) and, when `table`, a row per chunk. `pinned_ms`: the pinned H2D of the base's bytes as
/// one copy (what the copies would take at the reference rate).
std::vector<std::string> timeline_lines(const std::string& name, const TimedAdd& a, double pinned_ms, bool table) {
  const UploadTimeline& t = a.t;
  auto h = [&](Clock::time_point p) {
    return p == Clock::time_point{} ? -1.0 : std::chrono::duration<double, std::milli>(p - a.entry).count();
  };
  const double origin = h(t.origin);
  auto d = [&](double device_ms) { return origin + device_ms; };
  auto f2 = [](double v) { return fmt("%.2f", v); };
  auto f3 = [](double v) { return fmt("%.3f", v); };
  std::vector<std::string> out;
  if (!t.valid || t.chunks.empty()) {
    out.push_back("- " + name + ": no timeline recorded");
    return out;
  }
  const size_t n = t.chunks.size();
  double busy = 0, gaps = 0, largest_gap = 0, bytes = 0;
  size_t largest_at = 0, gap_count = 0;
  for (size_t c = 0; c < n; ++c) {
    const UploadTimeline::Chunk& k = t.chunks[c];
    busy += k.copy_end - k.copy_start;
    bytes += static_cast<double>(k.bytes);
    if (c > 0) {
      const double gap = k.copy_start - t.chunks[c - 1].copy_end;
      gaps += gap;
      if (gap > 0.005) ++gap_count;
      if (gap > largest_gap) {
        largest_gap = gap;
        largest_at = c;
      }
    }
  }
  const double first_start = d(t.chunks.front().copy_start), last_end = d(t.chunks.back().copy_end);
  double work_end = last_end;
  for (const UploadTimeline::Work& w : t.work) work_end = std::max(work_end, d(w.end));
  const double ret = h(a.returned);
  std::string l = "- " + name + ": add " + f2(ret) + " ms (synchronised " + f2(h(a.synced)) +
                  "; the pinned H2D of its " + f2(bytes / 1048576.0) + " MiB: " + f2(pinned_ms) +
                  "). Host: upload made " + f2(h(t.made)) + "-" + f2(h(t.constructed)) + ", run " + f2(h(t.run_start)) +
                  "-" + f2(h(t.run_end)) + ", destination made " + f2(h(t.prepare_start)) + "-" + f2(h(t.prepare_end)) +
                  " (had at " + f2(h(t.helper_joined)) + "), last copy issued " + f2(h(t.last_issued)) + ", commit " +
                  f2(h(t.commit_start)) + "-" + f2(h(t.commit_end)) + ". Device: copies " + f2(first_start) + "-" +
                  f2(last_end) + " (span " + f2(last_end - first_start) + ", busy " + f2(busy) + " = " +
                  fmt("%.1f GB/s", gbps(static_cast<size_t>(bytes), busy)) + ", gaps " + f3(gaps) + " in " +
                  std::to_string(gap_count) + " > 5 us, largest " + f3(largest_gap) + " before chunk " +
                  std::to_string(largest_at) + "); last device work ends " + f2(work_end) +
                  "; from the last copy's end to the add's return " + f2(ret - last_end) + " (device work " +
                  f2(work_end - last_end) + ", commit " + f2(h(t.commit_end) - h(t.commit_start)) + "); " +
                  std::to_string(n) + " chunks, " + std::to_string(t.work.size()) + " pieces of device work";
  out.push_back(l);
  if (!table) return out;
  out.push_back("");
  out.push_back("| chunk | MiB | lands | ready | issued | copy start | copy end | gap before | copy GB/s | "
                "device work after it (start-end) |");
  out.push_back("|---|---|---|---|---|---|---|---|---|---|");
  for (size_t c = 0; c < n; ++c) {
    const UploadTimeline::Chunk& k = t.chunks[c];
    std::string work;
    for (const UploadTimeline::Work& w : t.work)
      if (static_cast<size_t>(w.last_chunk) == c) {
        if (!work.empty()) work += "; ";
        work += w.move ? "move " : "work ";
        if (w.first_chunk != w.last_chunk)
          work += std::to_string(w.first_chunk) + "-" + std::to_string(w.last_chunk) + " ";
        work += f3(d(w.start)) + "-" + f3(d(w.end));
      }
    out.push_back("| " + std::to_string(c) + " | " + f2(k.bytes / 1048576.0) + " | " +
                  (k.in_slot ? "slot" : "place") + " | " + f3(h(k.ready)) + " | " + f3(h(k.issued)) + " | " +
                  f3(d(k.copy_start)) + " | " + f3(d(k.copy_end)) + " | " +
                  (c > 0 ? f3(k.copy_start - t.chunks[c - 1].copy_end) : std::string("-")) + " | " +
                  fmt("%.1f", gbps(static_cast<size_t>(k.bytes), k.copy_end - k.copy_start)) + " | " + work + " |");
  }
  out.push_back("");
  return out;
}

/// The copies of an add alone: chunks of `sizes` bytes from pinned `src` into `dst`, one cudaMemcpyAsync each on `s`
/// (events around each); ms from the first copy's start to the last one's end.
double chunked_copies_ms(void* dst, const void* src, const std::vector<int64_t>& sizes, cudaStream_t s) {
  std::vector<cudaEvent_t> ev(2 * sizes.size());
  for (cudaEvent_t& e : ev) check(cudaEventCreate(&e), "event");
  size_t at = 0;
  for (size_t c = 0; c < sizes.size(); ++c) {
    check(cudaEventRecord(ev[2 * c], s), "record");
    check(cudaMemcpyAsync(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at,
                          static_cast<size_t>(sizes[c]), cudaMemcpyHostToDevice, s),
          "copy");
    check(cudaEventRecord(ev[2 * c + 1], s), "record");
    at += static_cast<size_t>(sizes[c]);
  }
  check(cudaStreamSynchronize(s), "sync");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, ev.front(), ev.back()), "elapsed");
  for (cudaEvent_t e : ev) check(cudaEventDestroy(e), "event");
  return ms;
}

/// The timeline section: per base, one add of each kind with its timeline (float and uint8, pageable and from
/// page-locked rows; the latter also 200 ms after the previous Index was freed), then the add's copies alone into a
/// kept buffer and into one cudaMalloc'd right after a cudaFree of the stored bytes (as an add's rows follow the
/// previous Index's in this bench), with and without a rest.
void timeline_section(const std::vector<Base>& bases, int reps, cudaStream_t stream,
                      const std::function<void(const std::string&)>& emit) {
  constexpr int kRestMs = 200;
  emit("Timeline of one add per kind (upload.cuh UploadTimeline: CUDA events around each chunk's copy on the copy "
       "stream and around each piece of device work on the consumer, host time points of the add's phases; ms since "
       "the add's entry; device times placed by an event recorded on the idle copy stream when run started). Each "
       "add follows an untimed one whose Index (its rows) was freed right before it, as between the tables' adds; "
       "\"rested\": " + std::to_string(kRestMs) + " ms asleep after that free. ready: the chunk packed (its slot "
       "free), issued: its copy enqueued (host); gap before: its copy's start - the previous copy's end (device); "
       "lands: in place, or in a device slot (moved into place, or converted from it); work: on_chunk's norms and "
       "scan (and conversion); move: a chunk moved from its device slot into place.");
  emit("");
  struct Copies {
    std::string name;
    double kept = 0, new_stream = 0, after_free_kept = 0, after_free_fresh = 0, rested_fresh = 0, pinned = 0;
  };
  std::vector<Copies> copies;
  for (const Base& b : bases) {
    const size_t size = b.size();
    PinnedHost pinned(size);
    gknn::detail::parallel_memcpy(pinned.p, b.data, size);
    DeviceMem kept(size);
    const double pinned_ms = timed_h2d(reps, kept.p, pinned.p, size, stream);
    Base in_pinned = b;
    in_pinned.data = pinned.p;
    const char* kind = b.bytes ? "uint8" : "float32";
    auto show = [&](const std::string& how, const TimedAdd& a, bool table) {
      for (const std::string& l : timeline_lines(b.name + " (" + kind + ", " + how + ")", a, pinned_ms, table)) emit(l);
    };
    show("pageable", timeline_add(b, 0), true);
    const TimedAdd from_pinned = timeline_add(in_pinned, 0);
    show("from page-locked rows", from_pinned, true);
    show("from page-locked rows, rested", timeline_add(in_pinned, kRestMs), false);
    show("pageable, rested", timeline_add(b, kRestMs), false);
    emit("");
    // The copies alone, cut as the add from page-locked rows cut them.
    std::vector<int64_t> sizes;
    for (const UploadTimeline::Chunk& k : from_pinned.t.chunks) sizes.push_back(k.bytes);
    if (sizes.empty()) continue;
    const size_t stored = static_cast<size_t>(b.rows * (b.cols + 1)) * sizeof(float);  // an Index's rows and norms
    void* block = nullptr;
    check(cudaMalloc(&block, stored), "cudaMalloc");
    auto median_of = [&](const std::function<double()>& f) {
      (void)f();
      std::vector<double> v;
      for (int r = 0; r < reps; ++r) v.push_back(f());
      return median(v);
    };
    // 0: into the kept buffer; 1: the same after a cudaFree + cudaMalloc of the stored bytes; 2: into the block just
    // made; 3: as 2, kRestMs after the free; 4: into the kept buffer on a stream made for it (an add's copies run on
    // its Index's own stream, made with the Index).
    auto run = [&](int v) {
      check(cudaDeviceSynchronize(), "sync");
      if (v == 4) {
        cudaStream_t fresh;
        check(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking), "stream");
        const double ms = chunked_copies_ms(kept.p, pinned.p, sizes, fresh);
        check(cudaStreamDestroy(fresh), "stream");
        return ms;
      }
      if (v > 0) {
        check(cudaFree(block), "cudaFree");
        if (v == 3) std::this_thread::sleep_for(std::chrono::milliseconds(kRestMs));
        check(cudaMalloc(&block, stored), "cudaMalloc");
      }
      return chunked_copies_ms(v >= 2 ? block : kept.p, pinned.p, sizes, stream);
    };
    Copies c;
    c.name = b.name;
    c.pinned = pinned_ms;
    c.kept = median_of([&] { return run(0); });
    c.new_stream = median_of([&] { return run(4); });
    c.after_free_kept = median_of([&] { return run(1); });
    c.after_free_fresh = median_of([&] { return run(2); });
    c.rested_fresh = median_of([&] { return run(3); });
    copies.push_back(c);
    check(cudaFree(block), "cudaFree");
  }
  emit("The copies of the add from page-locked rows alone (its chunks, one cudaMemcpyAsync each on one stream, from "
       "the first start to the last end by events; median of " + std::to_string(reps) + "): into a kept device "
       "buffer; the same on a stream made for them; into it right after a cudaFree and cudaMalloc of an Index's "
       "stored bytes (rows as floats and norms); "
       "into the block just made; the same " + std::to_string(kRestMs) + " ms after the free:");
  emit("");
  emit("| base | pinned H2D, one copy ms | chunks into a kept buffer ms | new stream ms | "
       "after free + malloc, kept buffer ms | into the fresh block ms | fresh block, rested ms |");
  emit("|---|---|---|---|---|---|---|");
  for (const Copies& c : copies)
    emit("| " + c.name + " | " + fmt("%.2f", c.pinned) + " | " + fmt("%.2f", c.kept) + " | " +
         fmt("%.2f", c.new_stream) + " | " +
         fmt("%.2f", c.after_free_kept) + " | " + fmt("%.2f", c.after_free_fresh) + " | " +
         fmt("%.2f", c.rested_fresh) + " |");
  emit("");
}

/// SIFT-like values: integers 0..255, as bytes and as the floats of those bytes (the same rows both ways).
void make_rows(int64_t n, int64_t d, std::vector<uint8_t>* bytes, std::vector<float>* floats) {
  bytes->resize(static_cast<size_t>(n * d));
  floats->resize(bytes->size());
  const int parts = gknn::detail::host_team();
  const int64_t per = (n + parts - 1) / parts;
  gknn::detail::host_parallel(parts, [&](int part) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (part + 1);
    for (int64_t i = part * per; i < std::min(n, (part + 1) * per); ++i)
      for (int64_t j = 0; j < d; ++j) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const size_t at = static_cast<size_t>(i * d + j);
        (*bytes)[at] = static_cast<uint8_t>(x >> 56);
        (*floats)[at] = (*bytes)[at];
      }
  });
}

/// --pack-only: the pack table into pageable memory (every page touched first), no CUDA.
/// Back-to-back parallel_memcpy calls of 16 MiB (host_parallel jobs of 512 KiB parts, as the "pack per chunk"
/// column runs them), each timed: on the H200 host's 32 threads 64 such calls once took 39 s while one call of 512 MB
/// took 21 ms. The spread of single calls says whether some calls stall (a worker woken late) or all are slow.
std::string back_to_back_calls(const void* src, unsigned char* dst) {
  constexpr size_t kBytes = size_t(16) << 20;
  constexpr int kCalls = 256;
  std::vector<double> ms;
  for (int c = 0; c < kCalls; ++c) {
    const Clock::time_point t0 = Clock::now();
    gknn::detail::parallel_memcpy(dst + (c % 4) * kBytes, src, kBytes);
    ms.push_back(ms_since(t0));
  }
  std::sort(ms.begin(), ms.end());
  return std::to_string(kCalls) + " back-to-back parallel_memcpy calls of 16 MiB: median " + fmt("%.3f", ms[kCalls / 2]) +
         " ms, p90 " + fmt("%.3f", ms[kCalls * 9 / 10]) + " ms, max " + fmt("%.3f", ms.back()) + " ms (" +
         std::to_string(gknn::detail::host_team()) + " threads)";
}

int pack_only(const Options& o) {
  const int64_t n = 1000000, d = 128, small = 16384;
  std::vector<uint8_t> bytes;
  std::vector<float> floats;
  make_rows(n, d, &bytes, &floats);
  std::vector<std::string> lines;
  auto emit = [&](const std::string& l) {
    std::printf("%s\n", l.c_str());
    std::fflush(stdout);
    lines.push_back(l);
  };
  emit("# gknn upload bench, the pack alone (host only, pageable destinations): " +
       std::to_string(gknn::detail::host_team()) + " host threads, median of " + std::to_string(o.reps));
  emit("");
  emit(kPackHead);
  emit(kPackRule);
  std::vector<unsigned char> whole(bytes.size() * sizeof(float), 1), ring(kRingBytes, 1);
  struct B {
    const char* name;
    const void* data;
    int64_t rows;
    size_t row_bytes;
  };
  for (const B& b : {B{"1M x 128 float32", floats.data(), n, d * sizeof(float)}, B{"1M x 128 uint8", bytes.data(), n, d},
                     B{"16384 x 128 float32", floats.data(), small, d * sizeof(float)}}) {
    const gknn::detail::HostRows rows{b.data, b.rows, b.row_bytes, b.row_bytes};
    emit(pack_row(b.name, static_cast<size_t>(b.rows) * b.row_bytes,
                  pack_both_ways(rows, whole.data(), ring.data(), kRingBytes, o.reps)));
  }
  emit("");
  emit(back_to_back_calls(floats.data(), ring.data()));
  // The table's "pack per chunk" as it runs there (16 MiB chunks through 4 slots), into pageable slots: the step
  // that took 39 s on the H200 host with pinned ones.
  const size_t size = floats.size() * sizeof(float);
  const gknn::detail::cuda::UploadChunking cut = gknn::detail::cuda::upload_chunking(size, d * sizeof(float));
  std::vector<unsigned char> slots(cut.chunk_bytes * static_cast<size_t>(cut.slots), 1);
  const Base b{"1M x 128 float32", n, d, false, floats.data()};
  const double ms = host_timed(o.reps, [&] { (void)chunked_pack_ms(b, slots.data(), cut); });
  emit("pack per chunk of the 1M x 128 float32 base into pageable slots (" + fmt("%.2f", cut.chunk_bytes / 1048576.0) +
       fmt(" MiB x %.0f): ", cut.slots) + fmt("%.2f", ms) + " ms = " + fmt("%.1f", gbps(size, ms)) + " GB/s");
  if (!o.md.empty())
    if (FILE* f = std::fopen(o.md.c_str(), "w")) {
      for (const std::string& l : lines) std::fprintf(f, "%s\n", l.c_str());
      std::fclose(f);
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.pack_only) return pack_only(o);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gknn_upload_bench: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context");

  const int64_t n = 1000000, d = 128, small = 16384;
  std::vector<uint8_t> bytes;
  std::vector<float> floats;
  make_rows(n, d, &bytes, &floats);
  const std::vector<Base> bases{{"1M x 128 float32", n, d, false, floats.data()},
                                {"1M x 128 uint8", n, d, true, bytes.data()},
                                {"16384 x 128 float32", small, d, false, floats.data()}};

  std::vector<std::string> lines;
  auto emit = [&](const std::string& l) {
    std::printf("%s\n", l.c_str());
    std::fflush(stdout);
    lines.push_back(l);
  };
  emit("# gknn upload bench: " + std::string(prop.name) + ", " + std::to_string(gknn::detail::host_team()) +
       " host threads, median of " + std::to_string(o.reps));
  emit("");
  emit("Host last-level cache (cpu0): " + fmt("%.0f MiB", gknn::detail::last_level_cache_bytes() / 1048576.0) +
       "; large adds pack " +
       (gknn::detail::cuda::upload_cached_ring() ? "into a cache-resident ring with memcpy's stores"
                                                  : "with streaming stores"));
  emit("");
  // The adds' rows: from gknn's device pool, which keeps the previous (freed) Index's blocks, or cudaMalloc'd.
  emit(std::string("Index rows: ") +
       (gknn::detail::cuda::index_pool_enabled() ? "from gknn's device pool (GKNN_INDEX_POOL on)"
                                                 : "cudaMalloc (GKNN_INDEX_POOL=0)"));
  emit("");

  // The reference: a pinned copy of 512 MiB.
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const size_t ref_bytes = size_t(512) << 20;
  double pinned_ref_gbps = 0;
  {
    PinnedHost h(ref_bytes);
    DeviceMem dev(ref_bytes);
    std::memset(h.p, 1, ref_bytes);
    const double ms = timed_h2d(o.reps, dev.p, h.p, ref_bytes, stream);
    pinned_ref_gbps = gbps(ref_bytes, ms);
    emit("pinned H2D, 512 MiB: " + fmt("%.2f", ms) + " ms = **" + fmt("%.1f", pinned_ref_gbps) + " GB/s**");
    emit("");
  }
  auto write_md = [&] {
    check(cudaStreamDestroy(stream), "stream");
    gknn::detail::cuda::release_cached_device_resources();
    if (o.md.empty()) return 0;
    FILE* f = std::fopen(o.md.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "gknn_upload_bench: cannot write %s\n", o.md.c_str());
      return 1;
    }
    for (const std::string& l : lines) std::fprintf(f, "%s\n", l.c_str());
    std::fclose(f);
    std::printf("(written to %s)\n", o.md.c_str());
    return 0;
  };
  if (o.timeline_only) {
    timeline_section(bases, o.reps, stream, emit);
    return write_md();
  }

  emit("| base | MB | pinned H2D GB/s | pageable H2D GB/s | pack whole GB/s | pack per chunk GB/s | "
       "chunk MiB x slots | hostalloc + free ms | slot pinned + freed ms | cudaMalloc + free ms | first add ms | "
       "add ms | add GB/s | "
       "of pinned | host pack GB/s beside add | of min(pinned, host) | add from pinned rows ms | "
       "before ms (emulated) | same |");
  emit("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  std::vector<std::string> breakdowns, pinned_breakdowns;
  std::vector<int64_t> float_ids;
  std::vector<float> float_distances;
  for (const Base& b : bases) {
    const size_t size = b.size();
    PinnedHost pinned(size);
    DeviceMem dev(size);
    std::memset(pinned.p, 0, size);
    step(b.name + ": pinned H2D");
    const double pinned_ms = timed_h2d(o.reps, dev.p, pinned.p, size, stream);
    step(b.name + ": pageable H2D");
    const double pageable_ms =
        timed(o.reps, [&] { check(cudaMemcpy(dev.p, b.data, size, cudaMemcpyHostToDevice), "copy"); });
    step(b.name + ": pack whole (parallel_memcpy on " + std::to_string(gknn::detail::host_team()) + " threads)");
    const double pack_ms = timed(o.reps, [&] { gknn::detail::parallel_memcpy(pinned.p, b.data, size); });
    // The upload's chunking (set_upload_override off: its defaults), one slot packed chunk after chunk.
    const size_t row_bytes = static_cast<size_t>(b.cols) * (b.bytes ? 1 : sizeof(float));
    const gknn::detail::cuda::UploadChunking cut = gknn::detail::cuda::upload_chunking(size, row_bytes);
    const size_t chunk = cut.chunk_bytes;
    PinnedHost slots(chunk * static_cast<size_t>(cut.slots));
    auto pack_beside = [&] { return chunked_pack_ms(b, static_cast<unsigned char*>(slots.p), cut); };
    step(b.name + ": pack per chunk");
    const double chunk_pack_ms = timed(o.reps, [&] { (void)pack_beside(); });
    step(b.name + ": cudaHostAlloc, slot pinning, cudaMalloc");
    const double hostalloc_ms = timed(o.reps, [&] {
      void* p = nullptr;
      check(cudaHostAlloc(&p, chunk, cudaHostAllocDefault), "cudaHostAlloc");
      check(cudaFreeHost(p), "cudaFreeHost");
    });
    const double pin_slot_ms = timed(o.reps, [&] { (void)gknn::detail::cuda::time_pinned_slot(chunk); });
    const size_t stored = static_cast<size_t>(b.rows * b.cols) * sizeof(float);
    const double malloc_ms = timed(o.reps, [&] {
      void* p = nullptr;
      check(cudaMalloc(&p, stored), "cudaMalloc");
      check(cudaFree(p), "cudaFree");
    });
    step(b.name + ": adds");
    const AddTimes adds = time_adds(b, o.reps, pack_beside);
    const double first = adds.first, add = adds.add;
    breakdowns.push_back("- " + b.name + ": first add " + add_breakdown(first, adds.first_upload));
    breakdowns.push_back("- " + b.name + ": last add " + add_breakdown(adds.last, adds.last_upload));
    // What bounded this add: the link (pinned H2D of the same bytes) or the host's pack measured beside it.
    const double allowed_gbps = std::min(gbps(size, pinned_ms), gbps(size, adds.host));
    // The same rows in page-locked memory: the upload copies them where they are (no pack).
    gknn::detail::parallel_memcpy(pinned.p, b.data, size);
    Base in_pinned = b;
    in_pinned.data = pinned.p;
    step(b.name + ": adds from page-locked rows");
    const double add_pinned = median_add_ms(in_pinned, o.reps);
    step(b.name + ": the add before the kept slots (emulated)");
    const double before = median_legacy_add_ms(b, stream, o.reps);
    // The same rows as floats and as bytes make the same index.
    std::string same = "";
    if (b.rows == n) {
      const int64_t nq = 100, k = 10;
      Index index(b.cols, Metric::SquaredL2, Backend::Cuda);
      b.add_to(index);
      const Result r = index.search(FloatView{floats.data() + 12345 * d, nq, d, 0}, k);
      if (!b.bytes) {
        float_ids = r.indices;
        float_distances = r.distances;
      } else {
        same = r.indices == float_ids && r.distances == float_distances ? "yes" : "**NO**";
      }
    }
    emit("| " + b.name + " | " + fmt("%.1f", size / 1e6) + " | " + fmt("%.1f", gbps(size, pinned_ms)) + " | " +
         fmt("%.1f", gbps(size, pageable_ms)) + " | " + fmt("%.1f", gbps(size, pack_ms)) + " | " +
         fmt("%.1f", gbps(size, chunk_pack_ms)) + " | " + fmt("%.2f", chunk / 1048576.0) +
         fmt(" x %.0f | ", cut.slots) +
         fmt("%.2f", hostalloc_ms) + " | " + fmt("%.2f", pin_slot_ms) + " | " + fmt("%.2f", malloc_ms) + " | " +
         fmt("%.2f", first) + " | " +
         fmt("%.2f", add) + " | " + fmt("%.1f", gbps(size, add)) + " | " +
         fmt("%.0f%%", 100.0 * pinned_ms / add) + " | " + fmt("%.1f", gbps(size, adds.host)) + " | " +
         fmt("%.0f%%", 100.0 * gbps(size, add) / allowed_gbps) + " | " + fmt("%.2f", add_pinned) +
         fmt(" (%.0f%%) | ", 100.0 * pinned_ms / add_pinned) + fmt("%.2f", before) +
         fmt(" (%.1fx) | ", before / add) + same + " |");
  }
  emit("");
  emit("add GB/s: input bytes per second (the uint8 base stores 4x as many bytes on the device); of pinned: the pinned "
       "H2D time of the same bytes / the add's time (the headline); host pack beside add: the base packed chunk by "
       "chunk into pinned slots as the upload cuts it, on the host team, right before each timed add (median): what "
       "the host's memory allowed the pack then; of min(pinned, host): the add's GB/s over the smaller of the two "
       "(near 100%: the pipeline loses nothing to its own fill, drain and fixed costs); hostalloc + free: one "
       "slot's bytes by cudaHostAlloc (as the slots were made before); slot pinned + freed: as the uploads make a "
       "slot now (mapped, pages touched on the host team, cudaHostRegister), then freed.");
  emit("");
  emit("Where each base's first add (the first of the process for the first base: its pinned slots made) and its last "
       "timed add spent their host time (ms; the upload's phases):");
  emit("");
  for (const std::string& l : breakdowns) emit(l);
  emit("");

  {  // The pack alone, both ways, into pinned memory (the upload's slots are pinned).
    emit("The pack alone (core/chunk_pack's copy_rows on the host team, into pinned memory): memcpy's stores and "
         "streaming stores, the base whole (a part a thread) and in parts of <= 1 MiB into a ring of 4 x 16 MiB (as "
         "the upload's packers; no copy engine beside it):");
    emit("");
    emit(kPackHead);
    emit(kPackRule);
    PinnedHost whole(bases[0].size()), ring(kRingBytes);
    std::memset(whole.p, 1, bases[0].size());
    std::memset(ring.p, 1, kRingBytes);
    for (const Base& b : bases) {
      const size_t row_bytes = static_cast<size_t>(b.cols) * (b.bytes ? 1 : sizeof(float));
      emit(pack_row(b.name, b.size(),
                    pack_both_ways(gknn::detail::HostRows{b.data, b.rows, row_bytes, row_bytes},
                                   static_cast<unsigned char*>(whole.p), static_cast<unsigned char*>(ring.p),
                                   kRingBytes, o.reps)));
    }
    emit("");
  }

  {  // The adds both ways, without the ramp, from pinned rows; the pinned H2D as one copy and as a 2-D copy of rows.
    emit("Adds (median of " + std::to_string(o.reps) + ", the variants interleaved; ms and % of the pinned H2D of the "
         "same bytes): the pack's stores streaming (the default) or memcpy's, without the ramp of small chunks, from "
         "pinned rows (one 1-D copy a chunk); the pinned H2D of the base as one copy and as cudaMemcpy2DAsync of its "
         "rows (what the add from pinned rows issued a chunk before):");
    emit("");
    emit("| base | pinned H2D ms | as a 2-D copy of rows ms | add ms | add, memcpy pack ms | add, no ramp ms | "
         "add from pinned rows ms |");
    emit("|---|---|---|---|---|---|---|");
    for (const Base& b : bases) {
      const size_t size = b.size(), row_bytes = static_cast<size_t>(b.cols) * (b.bytes ? 1 : sizeof(float));
      PinnedHost pinned(size);
      DeviceMem dev(size);
      gknn::detail::parallel_memcpy(pinned.p, b.data, size);
      const double h2d = timed_h2d(o.reps, dev.p, pinned.p, size, stream);
      const double h2d_2d = timed(o.reps, [&] {
        check(cudaMemcpy2DAsync(dev.p, row_bytes, pinned.p, row_bytes, row_bytes, static_cast<size_t>(b.rows),
                                cudaMemcpyHostToDevice, stream),
              "copy 2-D");
        check(cudaStreamSynchronize(stream), "sync");
      });
      Base in_pinned = b;
      in_pinned.data = pinned.p;
      // 0: the default; 1: memcpy's stores; 2: no ramp; 3: from pinned rows.
      auto variant = [&](int v) {
        gknn::detail::set_pack_streaming(v != 1);
        if (v == 2) gknn::detail::cuda::set_upload_override({0, 0, false, 2});
        const double ms = add_ms(v == 3 ? in_pinned : b);
        gknn::detail::set_pack_streaming(true);
        gknn::detail::cuda::set_upload_override({});
        return ms;
      };
      std::vector<std::vector<double>> ms(4);
      for (int v = 0; v < 4; ++v) (void)variant(v);
      for (int r = 0; r < o.reps; ++r)
        for (int v = 0; v < 4; ++v) ms[static_cast<size_t>(v)].push_back(variant(v));
      (void)variant(3);
      pinned_breakdowns.push_back("- " + b.name + ": add from pinned rows " +
                                  add_breakdown(ms[3].back(), gknn::detail::cuda::last_upload_times()));
      auto cell = [&](double m) { return fmt("%.2f", m) + fmt(" (%.0f%%)", 100.0 * h2d / m); };
      emit("| " + b.name + " | " + fmt("%.2f", h2d) + " | " + cell(h2d_2d) + " | " + cell(median(ms[0])) + " | " +
           cell(median(ms[1])) + " | " + cell(median(ms[2])) + " | " + cell(median(ms[3])) + " |");
    }
    emit("");
    for (const std::string& l : pinned_breakdowns) emit(l);
    emit("");
  }
  timeline_section(bases, o.reps, stream, emit);

  {  // cudaHostRegister of the caller's rows instead of the pack, for one large contiguous add.
    const Base& b = bases[0];
    const size_t size = b.size();
    DeviceMem dev(size);
    std::vector<double> reg, copy, unreg;
    for (int r = 0; r < o.reps; ++r) {
      Clock::time_point t0 = Clock::now();
      check(cudaHostRegister(const_cast<void*>(b.data), size, cudaHostRegisterDefault), "cudaHostRegister");
      reg.push_back(ms_since(t0));
      t0 = Clock::now();
      check(cudaMemcpyAsync(dev.p, b.data, size, cudaMemcpyHostToDevice, stream), "copy");
      check(cudaStreamSynchronize(stream), "sync");
      copy.push_back(ms_since(t0));
      t0 = Clock::now();
      check(cudaHostUnregister(const_cast<void*>(b.data)), "cudaHostUnregister");
      unreg.push_back(ms_since(t0));
    }
    const double total = median(reg) + median(copy) + median(unreg);
    emit("cudaHostRegister of the " + b.name + " base: register " + fmt("%.2f", median(reg)) + " ms + copy " +
         fmt("%.2f", median(copy)) + " ms + unregister " + fmt("%.2f", median(unreg)) + " ms = " + fmt("%.2f", total) +
         " ms (" + fmt("%.1f", gbps(size, total)) + " GB/s)");
    emit("");
  }

  if (o.sweep) {  // the chunking of the 512 MB float base
    const Base& b = bases[0];
    emit("Sweep: Index::add of the " + b.name + " base by chunking (median of " + std::to_string(o.reps) +
         "; ms, and % of the 512 MiB pinned H2D)");
    emit("");
    const std::vector<int> slot_counts{2, 3, 4, 6};
    std::string head = "| chunk MiB |", rule = "|---|";
    for (int s : slot_counts) {
      head += fmt(" %.0f slots |", s);
      rule += "---|";
    }
    // Memcpy's stores into a ring small enough to stay in the host's last-level cache: the pack's lines are then
    // written there (no DRAM write, no read for ownership from DRAM) and the copy engine's reads, which snoop the
    // cache, find them there: about 1 byte of DRAM traffic per byte uploaded against the streaming pack's 3 (source
    // read, slot written, slot read by the DMA), which bounds pageable adds by host memory (issue 12).
    head += " 4 slots, write-combined | 4 slots, memcpy stores | 8 slots, memcpy stores |";
    rule += "---|---|---|";
    emit(head);
    emit(rule);
    for (int mib : {1, 2, 4, 8, 16, 32}) {
      std::string line = "| " + std::to_string(mib) + " |";
      auto cell = [&](int slots, bool wc, bool streaming) {
        gknn::detail::cuda::set_upload_override({int64_t(mib) << 20, slots, wc});
        gknn::detail::set_pack_streaming(streaming);
        const double ms = median_add_ms(b, o.reps);
        gknn::detail::set_pack_streaming(true);
        line += fmt(" %.2f", ms) + fmt(" (%.0f%%) |", 100.0 * gbps(b.size(), ms) / pinned_ref_gbps);
      };
      for (int s : slot_counts) cell(s, false, true);
      cell(4, true, true);
      cell(4, false, false);
      cell(8, false, false);
      emit(line);
    }
    gknn::detail::cuda::set_upload_override({});
    emit("");
    emit("pinned slots allocated by uploads in this process: " +
         std::to_string(gknn::detail::cuda::upload_pinned_allocations()));
  }
  return write_md();
}
