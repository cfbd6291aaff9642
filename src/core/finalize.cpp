#include "core/finalize.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include "core/env_switch.hpp"
#include "core/host_parallel.hpp"
#include "core/keys.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {

#ifdef __linux__
#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14's value, for older C library headers
#endif
#endif

void restore_tie_order(const float* values, int64_t* indices, int64_t count) {
  for (int64_t begin = 0; begin < count;) {
    int64_t end = begin + 1;
    while (end < count && values[end] == values[begin]) ++end;
    std::sort(indices + begin, indices + end);
    begin = end;
  }
}

namespace {

void check_result_size(int64_t rows, int64_t k) {
  // k > n pads every row, so a huge k is a huge allocation: refuse it by name instead of a bare bad_alloc.
  GKNN_EXPECT(rows == 0 || k <= std::numeric_limits<int64_t>::max() / 12 / rows, ErrorCode::OutOfMemory,
              "a result of ", rows, " x k = ", k, " entries cannot be addressed");
}

/// Row i of the keys, in the user's form, into row `to` of the destination (host memory).
void finalize_row(const KeyResult& keys, const OutputSpec& out, const ResultView& dest, int64_t i, int64_t to) {
  const int64_t k = out.k, kept = std::min(k, keys.k);
  float* d = dest.distances + to * k;
  int64_t* ix = dest.indices + to * k;
  for (int64_t j = 0; j < kept; ++j) {
    const size_t from = static_cast<size_t>(i * keys.k + j);
    d[j] = key_to_value(out.metric, out.p, keys.distances[from]);
    ix[j] = keys.indices[from];
  }
  restore_tie_order(d, ix, kept);
  std::fill(d + kept, d + k, padding_value(out.metric));
  std::fill(ix + kept, ix + k, int64_t(-1));
  if (out.ids)
    for (int64_t j = 0; j < kept; ++j) ix[j] = out.ids[ix[j]];
}

}  // namespace

void finalize_into(const KeyResult& keys, const OutputSpec& out, int threads) {
  check_result_size(keys.rows, out.k);
  const ResultView dest = out.destination();
  GKNN_EXPECT(dest.memory == Memory::Host, ErrorCode::Unsupported,
              "device-memory results need the cuda backend (this search ran on the cpu backend)");
  // Row ranges on gknn's host pool (host_for), not an OpenMP team: a sharded search finalises right after its
  // shards' threads, and OpenMP's idle threads spin for milliseconds after each region (GOMP_SPINCOUNT), so a team
  // of every core waited for cores held by spinning threads: on two H200s the one-device ShardedIndex took 93 ms for
  // the 81.7 ms of its key search (10M x 128 uint8, 10k queries, k = 10), 81.7 with OMP_WAIT_POLICY=passive.
  constexpr int64_t kEntriesPerPart = int64_t(1) << 15;  // tens of microseconds of work
  host_for(keys.rows, out.k, kEntriesPerPart, threads, [&](int64_t i) { finalize_row(keys, out, dest, i, i); });
}

void write_rows(const KeyResult& keys, const std::vector<int64_t>& rows, const OutputSpec& out, int threads) {
  if (keys.rows == 0) return;
  const ResultView dest = out.destination();
  if (dest.memory == Memory::Host) {
    for (int64_t i = 0; i < keys.rows; ++i) finalize_row(keys, out, dest, i, rows[size_t(i)]);
    return;
  }
  Result part = allocate_result(keys.rows, out.k);
  OutputSpec staged = out;
  staged.memory = Memory::Host;
  staged.destination = [&part] { return view_of(part); };
  finalize_into(keys, staged, threads);
  cuda::scatter_rows(part, rows, dest);
}

namespace {

[[noreturn]] void result_too_large(int64_t rows, int64_t k) {
  fail(ErrorCode::OutOfMemory, "a result of ", rows, " x k = ", k, " entries (", rows * k * 12,
       " bytes) does not fit in host memory; lower k");
}

}  // namespace

Result allocate_result(int64_t rows, int64_t k) {
  check_result_size(rows, k);
  Result r;
  r.rows = rows;
  r.k = k;
  try {
    // Left uninitialised: every producer of a Result writes each of its entries (k > n padding included).
    r.distances = HostArray<float>::for_overwrite(static_cast<size_t>(rows * k));
    r.indices = HostArray<int64_t>::for_overwrite(static_cast<size_t>(rows * k));
  } catch (const std::bad_alloc&) {
    result_too_large(rows, k);
  }
  return r;
}

namespace {

#ifdef __linux__
/// Threads of a population: half the hardware threads, at most 8 (the other half copies rows into the pages
/// meanwhile); GKNN_POPULATE_THREADS=N sets it (issue 14's A/B: a GPU-only join leaves the CPUs idle otherwise).
size_t population_threads() {
  static const size_t threads = [] {
    const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
    const size_t fallback = std::min<size_t>(8, std::max<size_t>(1, hardware / 2));
    return std::clamp<size_t>(size_t(env_positive("GKNN_POPULATE_THREADS", double(fallback))), 1, 64);
  }();
  return threads;
}

/// Has the pages of [begin, end) allocated for writing, in parallel parts: the kernel populates them (madvise
/// MADV_POPULATE_WRITE, Linux >= 5.14); where it refuses, each part writes one byte per page (the contents are
/// uninitialised anyway), so the page faults are taken here, on several threads, not at the first copy-out.
void populate(void* begin, void* end) {
  constexpr uintptr_t kPage = 4096;
  constexpr size_t kPart = size_t(16) << 20;  // a part per 16 MiB (the caller's thread alone below), up to 8
  const uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  const uintptr_t e = reinterpret_cast<uintptr_t>(end) & ~(kPage - 1);
  if (e <= b) return;
  const size_t bytes = e - b;
  // Huge pages: populate_result asked for them (advise_huge) before any part of the result was populated.
  const size_t parts = std::clamp<size_t>(bytes / kPart, 1, population_threads());
  const size_t chunk = (bytes / parts + kPage - 1) & ~(kPage - 1);
  // Each thread's part in slices of 4 MiB, one madvise call each: a call holds the process's mmap lock (read) for
  // its whole range, and an mmap-side writer (cudaMalloc, cudaMallocHost, cudaFree) waits for every reader, while
  // new readers queue behind it. One call per part (120 MB of a 10^7 x 16 join result) held the join's grid build,
  // run beside the population, until the population ended (H200, issue 14: index 164 ms, ending with the
  // population's 212 ms). Where the kernel refuses, one byte per page is touched by an atomic add of 0, a write that
  // keeps the value: a join's writers may already be filling the pages (join.cpp populates beside them).
  constexpr uintptr_t kSlice = uintptr_t(4) << 20;
  auto advise = [](uintptr_t from, uintptr_t to) {
    bool refused = false;
    for (uintptr_t at = from; at < to && !refused; at += kSlice)
      refused = madvise(reinterpret_cast<void*>(at), std::min(to, at + kSlice) - at, kMadvPopulateWrite) != 0;
    if (!refused) return;
    for (uintptr_t page = from; page < to; page += kPage)
      __atomic_fetch_add(reinterpret_cast<char*>(page), char(0), __ATOMIC_RELAXED);
  };
  std::vector<std::thread> helpers;
  for (size_t p = 1; p < parts; ++p) {
    const uintptr_t from = std::min<uintptr_t>(e, b + p * chunk), to = std::min<uintptr_t>(e, from + chunk);
    try {
      helpers.emplace_back(advise, from, to);
    } catch (const std::system_error&) {
      advise(from, to);  // no thread to be had: this one does the part
    }
  }
  advise(b, std::min<uintptr_t>(e, b + chunk));
  for (std::thread& t : helpers) t.join();
}
/// Huge pages where the kernel gives them on request (transparent_hugepage = madvise, the H100 host's setting): a
/// 2 MiB page is one fault instead of 512. 3.84 GB on 8 threads of that host: 0.85 s -> 0.55-0.66 s alone, and a
/// 10^7 x 32 join result 0.8-1.0 s -> 0.35-0.42 s beside the join (2026-11-25). Ignored where refused.
void advise_huge(void* begin, void* end) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  const uintptr_t e = reinterpret_cast<uintptr_t>(end) & ~(kPage - 1);
  if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}
#else
void populate(void*, void*) {}
void advise_huge(void*, void*) {}
#endif

}  // namespace

void populate_result(Result& r) {
  const size_t n = r.distances.size();
  // Both arrays first: the join's writers may fault pages of the indices while the distances are being populated
  // (join.cpp populates beside them), and a page faulted before the advice stays a 4 KiB one.
  advise_huge(r.distances.data(), r.distances.data() + n);
  advise_huge(r.indices.data(), r.indices.data() + r.indices.size());
  populate(r.distances.data(), r.distances.data() + n);
  populate(r.indices.data(), r.indices.data() + r.indices.size());
}

namespace {

std::atomic<void* (*)(size_t, size_t*) noexcept> g_page_locked_take{nullptr};
std::atomic<HostArray<float>::Releaser> g_page_locked_give{nullptr};
thread_local bool t_page_locked_results = false;

/// Both arrays of a rows x k result in page-locked blocks, or false (nothing taken) where the memory gives none.
bool take_page_locked(Result& r, int64_t rows, int64_t k) {
  const auto take = g_page_locked_take.load(std::memory_order_acquire);
  const auto give = g_page_locked_give.load(std::memory_order_acquire);
  const size_t n = static_cast<size_t>(rows * k);
  if (!t_page_locked_results || !take || !give || n == 0) return false;
  size_t distance_bytes = 0, index_bytes = 0;
  void* distances = take(n * sizeof(float), &distance_bytes);
  if (!distances) return false;
  void* indices = take(n * sizeof(int64_t), &index_bytes);
  if (!indices) {
    give(distances, distance_bytes);
    return false;
  }
  r.distances = HostArray<float>::adopt(static_cast<float*>(distances), n, distance_bytes, give);
  r.indices = HostArray<int64_t>::adopt(static_cast<int64_t*>(indices), n, index_bytes, give);
  return true;
}

}  // namespace

void set_page_locked_memory(PageLockedMemory memory) noexcept {
  g_page_locked_give.store(memory.give, std::memory_order_release);
  g_page_locked_take.store(memory.take, std::memory_order_release);
}

PageLockedResults::PageLockedResults() noexcept : outer_(t_page_locked_results) { t_page_locked_results = true; }
PageLockedResults::~PageLockedResults() { t_page_locked_results = outer_; }

Result allocate_result_populated(int64_t rows, int64_t k) {
  check_result_size(rows, k);
  Result r;
  if (take_page_locked(r, rows, k)) {  // resident already: nothing to populate
    r.rows = rows;
    r.k = k;
    return r;
  }
  r = allocate_result(rows, k);
  populate_result(r);
  return r;
}

ResultView view_of(Result& r) {
  return ResultView{r.distances.data(), r.indices.data(), r.rows, r.k, Memory::Host};
}

Result finalize(KeyResult keys, Metric metric, double p, int64_t k) {
  OutputSpec spec;
  spec.metric = metric;
  spec.p = p;
  spec.k = k;
  if (keys.k == k) {
    // Same shape: each entry becomes its value where it is (finalize_row reads entry j of a row before it writes
    // it, and sorts tie runs of what it wrote), so no second result is allocated and filled.
    spec.destination = [&keys] { return view_of(keys); };
    finalize_into(keys, spec, 0);
    return keys;
  }
  Result out = allocate_result(keys.rows, k);
  spec.destination = [&out] { return view_of(out); };
  finalize_into(keys, spec, 0);
  return out;
}

OutputSpec key_output_into(const ResultView& dest) {
  OutputSpec spec;
  spec.metric = Metric::SquaredL2;  // the identity on keys
  spec.k = dest.k;
  spec.memory = dest.memory;
  spec.destination = [dest] { return dest; };
  return spec;
}

OutputSpec key_output(KeyResult& keys, int64_t rows, int64_t k) {
  keys.rows = rows;
  keys.k = k;
  OutputSpec spec = key_output_into(ResultView{nullptr, nullptr, rows, k, Memory::Host});
  // Populated as Index::search's results are: a shard's lists (q x k, 12 MB at 10k x 100) are made on the CUDA
  // writer's helper thread while the device computes, so their page faults stay off the copy-out (issue 17).
  spec.destination = [&keys, rows, k] {
    keys = allocate_result_populated(rows, k);
    return view_of(keys);
  };
  return spec;
}

void write_keys(const KeyResult& keys, const OutputSpec& out, int threads) {
  if (out.memory == Memory::Host) return finalize_into(keys, out, threads);
  Result host = allocate_result(keys.rows, out.k);
  OutputSpec staged = out;
  staged.memory = Memory::Host;
  staged.destination = [&host] { return view_of(host); };
  finalize_into(keys, staged, threads);
  cuda::upload_result(host, out.destination());
}

void explain_on(Backend backend, const SearchParams& key_params, int64_t nq, int64_t nb, int64_t dim,
                const ValueStats& facts, SearchPlan& plan) {
  if (backend == Backend::Cuda) return cuda::explain(key_params, nq, nb, dim, facts, plan);
  cpu::explain(key_params, nq, nb, dim, facts, plan);
}

KeyResult search_keys(const ResidentStore& store, FloatView queries, const SearchParams& key_params,
                      const ValueStats& query_stats) {
  KeyResult keys;
  const OutputSpec spec = key_output(keys, queries.rows, key_params.k);
  if (queries.rows > 0) store.search_into(queries, key_params, query_stats, spec);
  return keys;
}

SearchParams key_params(const SearchParams& params, int64_t n) {
  SearchParams kp = params;
  kp.metric = key_metric(params.metric);
  kp.k = std::min(params.k, n);
  return kp;
}

}  // namespace gknn::detail
