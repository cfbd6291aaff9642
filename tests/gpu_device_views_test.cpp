// gpu_device_views_test.cpp: device views (Memory::Device) get what host arrays get (issue 15): the same value
// facts from the device scan (core/value_facts.hpp is shared with the host scan), hence the same plan (explain and
// the search's own choice) and identical results; NaN and Inf rejected with the host's error naming the row and
// column; and repeated one-shot searches of device views allocate nothing once the first call has run (their
// tiles are planned within what the pipeline lease keeps; a device base's row norms are kept by the pipeline too).
// select_k on device views: identical to the CPU's select_k (ties, +-inf, -0.0, labels, row strides, k = cols and
// k > cols, both orders, every CUDA selector, one tile or many), into a Result or a host or device ResultView; the
// host's NaN error; argument errors. Label gpu.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/finalize.hpp"
#include "core/validate.hpp"
#include "cuda/hooks.hpp"
#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"
#include "testing/sanitize.hpp"

namespace gknn::testing {
namespace {

/// A device copy of host floats (freed with the object).
struct DeviceFloats {
  float* ptr = nullptr;
  explicit DeviceFloats(const std::vector<float>& host) {
    EXPECT_EQ(cudaSuccess, cudaMalloc(&ptr, host.size() * sizeof(float)));
    EXPECT_EQ(cudaSuccess, cudaMemcpy(ptr, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DeviceFloats() { cudaFree(ptr); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
};

/// Device storage for a rows x k result, and its copy back to the host.
struct DeviceResult {
  float* values = nullptr;
  int64_t* indices = nullptr;
  int64_t rows, k;
  DeviceResult(int64_t r, int64_t kk) : rows(r), k(kk) {
    EXPECT_EQ(cudaSuccess, cudaMalloc(&values, size_t(std::max<int64_t>(1, r * kk)) * sizeof(float)));
    EXPECT_EQ(cudaSuccess, cudaMalloc(&indices, size_t(std::max<int64_t>(1, r * kk)) * sizeof(int64_t)));
  }
  ~DeviceResult() {
    cudaFree(values);
    cudaFree(indices);
  }
  DeviceResult(const DeviceResult&) = delete;
  DeviceResult& operator=(const DeviceResult&) = delete;
  ResultView view() const { return ResultView{values, indices, rows, k, Memory::Device}; }
  Result download() const {
    Result r;
    r.rows = rows;
    r.k = k;
    r.distances.resize(size_t(rows * k));
    r.indices.resize(size_t(rows * k));
    EXPECT_EQ(cudaSuccess, cudaMemcpy(r.distances.data(), values, r.distances.size() * sizeof(float),
                                      cudaMemcpyDeviceToHost));
    EXPECT_EQ(cudaSuccess, cudaMemcpy(r.indices.data(), indices, r.indices.size() * sizeof(int64_t),
                                      cudaMemcpyDeviceToHost));
    return r;
  }
};

FloatView on_device(const DeviceFloats& d, FloatView host) {
  return FloatView{d.ptr, host.rows, host.cols, host.stride, Memory::Device};
}

SearchParams cuda_params(int64_t k) {
  SearchParams p;
  p.k = k;
  p.backend = Backend::Cuda;
  return p;
}

void expect_same_facts(const detail::ValueStats& host, const detail::ValueStats& device) {
  EXPECT_TRUE(device.known);
  EXPECT_EQ(host.integral, device.integral);
  EXPECT_EQ(host.nonnegative, device.nonnegative);
  EXPECT_EQ(host.max_abs, device.max_abs);
}

TEST(DeviceViews, ScanGivesTheHostFacts) {
  struct Data {
    const char* name;
    std::vector<float> values;
    int64_t rows, cols, stride;
  };
  const float big = 16777216.f;  // 2^24: an integer, beyond fp16's exact range
  std::vector<Data> cases = {
      {"uint8-valued", integer_matrix(300, 37, 0, 255, 1).data, 300, 37, 0},
      {"signed integers", integer_matrix(300, 37, -9, 9, 2).data, 300, 37, 0},
      {"fractions", random_matrix(300, 37, 3).data, 300, 37, 0},
      {"-0.0 only", std::vector<float>(64, -0.f), 8, 8, 0},
      {"one fraction in the last row", std::vector<float>(128, 3.f), 4, 32, 0},
      {"integers >= 2^23 and a negative", {big, 8388609.f, -1.f, 2.f}, 2, 2, 0},
      {"strided: fractions only in the padding", std::vector<float>(40 * 10, 0.5f), 40, 6, 10},
  };
  cases[4].values.back() = 3.25f;
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 6; ++j) cases[6].values[static_cast<size_t>(i * 10 + j)] = static_cast<float>(i - j);
  for (const Data& c : cases) {
    SCOPED_TRACE(c.name);
    const FloatView host{c.values.data(), c.rows, c.cols, c.stride};
    const DeviceFloats d(c.values);
    expect_same_facts(detail::validate_matrix(host, "base", false),
                      detail::validate_matrix(on_device(d, host), "base", false));
  }
  // The strided case must not read the padding: its facts are those of integers.
  const FloatView strided{cases[6].values.data(), 40, 6, 10};
  EXPECT_TRUE(detail::validate_matrix(strided, "base", false).integral);
}

bool integers_case(const char* name) { return std::string(name) != "fractions"; }

TEST(DeviceViews, IntegerDataGetTheHostPlanAndIdenticalResults) {
  // nq x nb above Auto's threshold for the fused kernel (2^23 pairs, 16 queries), nq at its 256 queries for tf32.
  const int64_t nb = sized(int64_t(70000), int64_t(9000)), nq = sized(int64_t(256), int64_t(1000));
  struct Data {
    const char* name;
    HostMatrix<float> base, queries;
  };
  const Data cases[] = {
      {"uint8-valued", integer_matrix(nb, 64, 0, 255, 11), integer_matrix(nq, 64, 0, 255, 12)},
      {"signed integers", integer_matrix(nb, 64, -20, 20, 13), integer_matrix(nq, 64, -20, 20, 14)},
      {"fractions", random_matrix(nb, 64, 15), random_matrix(nq, 64, 16)},
  };
  for (const Data& c : cases) {
    // racecheck (testing/sanitize.hpp): the signed integers run the fused kernel's other operand instantiation,
    // whose shared-memory protocol is the uint8 one's (gpu_fused checks both under racecheck); their scan and plan
    // are checked by the other three tools. (racecheck's shard with this test ran past 300 s, 2026-11-27.)
    if (racecheck_mode() && std::string(c.name) == "signed integers") continue;
    SCOPED_TRACE(c.name);
    const DeviceFloats db(c.base.data), dq(c.queries.data);
    const FloatView b = on_device(db, c.base.view()), q = on_device(dq, c.queries.view());
    for (int64_t k : {int64_t(10), int64_t(100), int64_t(300)}) {  // 300: beyond the fused kernel's shared lists
      // Sanitized: k = 10 (fused) and 300 (beyond it) keep both paths; racecheck ran out of its 300 s on the three
      // (2026-11-26, most of it in cuBLAS's kernels for the fractions).
      if (sanitize_mode() && k == 100) continue;
      // racecheck: the fractions at k = 10 only (tf32 + the device certificate; k = 300 is cuBLAS's SGEMM, whose
      // kernels racecheck skips, and the same certificate kernel).
      if (racecheck_mode() && !integers_case(c.name) && k == 300) continue;
      // racecheck: the uint8 data at k = 10 only: k = 300 runs the fused kernel's filter rounds on u8 operands of
      // 64-byte rows, gpu_fused's LargeKOverBaseTilesAndAKeptCopy under racecheck (this test's shard took 199 s,
      // run 17, 2026-11-27); the other tools check the device views' k = 300 here.
      if (racecheck_mode() && k == 300) continue;
      SCOPED_TRACE("k = " + std::to_string(k));
      const SearchParams p = cuda_params(k);
      const SearchPlan host_plan = explain_search(c.base.view(), c.queries.view(), p);
      const SearchPlan device_plan = explain_search(b, q, p);
      EXPECT_EQ(host_plan.distance, device_plan.distance);
      EXPECT_EQ(host_plan.distance_reason, device_plan.distance_reason);
      EXPECT_EQ(host_plan.select, device_plan.select);
      // Not a vacuous comparison: by Auto's rules (unless a measured plan table chose), integer data take the fused
      // kernel (k <= 1024: k = 300 in its filter rounds), fractions (guarded) tf32 up to k = 256, cuBLAS beyond.
      const bool integers = integers_case(c.name);
      const DistanceAlgorithm rule = !integers ? (k <= 256 ? DistanceAlgorithm::Tf32 : DistanceAlgorithm::Cublas)
                                               : DistanceAlgorithm::Fused;
      if (device_plan.distance_reason.rfind("auto:", 0) == 0) {
        EXPECT_EQ(rule, device_plan.distance);
      }

      const Result want = search(c.base.view(), c.queries.view(), p);
      const DeviceResult out(nq, k);
      search(b, q, p, out.view());
      const Result got = out.download();
      EXPECT_EQ(want.indices, got.indices);
      EXPECT_EQ(want.distances, got.distances);
    }
  }
}

TEST(DeviceViews, FloatDataGetTheOraclesNeighboursThroughTheGuard) {
  // The exactness guard with device views (core/guard.hpp): the queries come down, the candidates' float64 keys are
  // computed where the base lives (pipeline/guard.cu, bit-identical to the host's), the result goes up. One-shot
  // search and a cuda Index with device queries, both into device results.
  const int64_t nb = sized(int64_t(20000), int64_t(3000)), nq = sized(int64_t(300), int64_t(40)), k = 50;
  const HostMatrix<float> base = random_matrix(nb, 48, 17), queries = random_matrix(nq, 48, 18);
  const DeviceFloats db(base.data), dq(queries.data);
  const FloatView b = on_device(db, base.view()), q = on_device(dq, queries.view());
  const DeviceResult out(nq, k);
  CheckOptions exact;
  exact.exact_indices = true;
  for (Metric metric : {Metric::SquaredL2, Metric::InnerProduct}) {
    SCOPED_TRACE(to_string(metric));
    SearchParams p = cuda_params(k);
    p.metric = metric;
    SearchStats stats;
    p.stats = &stats;
    search(b, q, p, out.view());
    EXPECT_GT(stats.guard_candidates, k);
    p.stats = nullptr;
    EXPECT_EQ("", check_search(out.download(), base.view(), queries.view(), p, exact));
    Index index(48, metric, Backend::Cuda);
    index.add(b);
    index.search(q, p, out.view());
    EXPECT_EQ("", check_search(out.download(), base.view(), queries.view(), p, exact));
  }
}

TEST(DeviceViews, GuardRetriesAreWrittenIntoADeviceResult) {
  // Rows one ulp apart defeat the first certificate, so some queries are searched again and their rows written over
  // the first pass's in the device result (write_rows: a host copy scattered on the device, guard.cu scatter_rows);
  // the untouched rows keep what the first pass wrote there.
  HostMatrix<float> base, queries;
  near_ties(sanitize_mode() ? 400 : 2000, 24, 9, base, queries);
  const DeviceFloats db(base.data), dq(queries.data);
  const FloatView b = on_device(db, base.view()), q = on_device(dq, queries.view());
  CheckOptions exact;
  exact.exact_indices = true;
  for (int64_t k : {int64_t(10), int64_t(64)}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    const DeviceResult out(queries.rows, k);
    SearchParams p = cuda_params(k);
    SearchStats stats;
    p.stats = &stats;
    search(b, q, p, out.view());
    EXPECT_GT(stats.guard_retried, 0) << "near ties must defeat the first certificate";
    EXPECT_GT(stats.guard_device_rows, queries.rows) << "the first pass and the retries certified on the device";
    p.stats = nullptr;
    EXPECT_EQ("", check_search(out.download(), base.view(), queries.view(), p, exact));
    Index index(24, Metric::SquaredL2, Backend::Cuda);
    index.add(b);
    index.search(q, p, out.view());
    EXPECT_EQ("", check_search(out.download(), base.view(), queries.view(), p, exact));
  }
}

TEST(DeviceViews, NonFiniteValuesGetTheHostError) {
  const HostMatrix<float> good = integer_matrix(40, 8, 1, 3, 50);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    for (bool in_base : {true, false}) {
      HostMatrix<float> poisoned = good;
      poisoned.row(13)[2] = bad;
      poisoned.row(29)[5] = bad;  // a later bad row: the error names the first
      SCOPED_TRACE(std::string(in_base ? "base" : "queries") + " holds " + std::to_string(bad));
      const DeviceFloats dg(good.data), dp(poisoned.data);
      const FloatView g = on_device(dg, good.view()), pv = on_device(dp, poisoned.view());
      auto message = [&](FloatView base, FloatView queries) -> std::string {
        try {
          (void)search(base, queries, cuda_params(3));
        } catch (const Error& err) {
          EXPECT_EQ(ErrorCode::InvalidArgument, err.code());
          return err.what();
        }
        ADD_FAILURE() << "a non-finite coordinate was accepted";
        return "";
      };
      const std::string host = in_base ? message(poisoned.view(), good.view()) : message(good.view(), poisoned.view());
      const std::string device = in_base ? message(pv, g) : message(g, pv);
      EXPECT_NE(std::string::npos, host.find("row 13 column 2")) << host;
      EXPECT_EQ(host, device);
    }
  }
}

TEST(DeviceViews, HostPointerLabelledDeviceIsRefusedOrReadCoherently) {
  const HostMatrix<float> base = integer_matrix(50, 8, 0, 9, 60);
  int device = 0, pageable = 0;
  ASSERT_EQ(cudaSuccess, cudaGetDevice(&device));
  ASSERT_EQ(cudaSuccess, cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, device));
  FloatView mislabelled = base.view();
  mislabelled.memory = Memory::Device;
  if (pageable) {  // HMM/ATS: a kernel may read pageable memory, and gets the host's facts
    expect_same_facts(detail::validate_matrix(base.view(), "base", false),
                      detail::validate_matrix(mislabelled, "base", false));
  } else {
    try {
      (void)detail::validate_matrix(mislabelled, "base", false);
      ADD_FAILURE() << "host memory passed as Memory::Device was scanned";
    } catch (const Error& err) {
      EXPECT_EQ(ErrorCode::InvalidArgument, err.code());
      EXPECT_NE(std::string::npos, std::string(err.what()).find("not CUDA memory")) << err.what();
    }
  }
}

/// Bytes a search allocates beyond what gknn's buffers held before it (the most they held while it ran, less that).
/// gknn's own count (cuda/hooks.hpp): cudaMemGetInfo moved with the other processes on the device (16 under
/// compute-sanitizer: 17-176 MB of movement, 2026-11-25) and with the tools' own allocations.
struct AllocationWatch {
  int64_t before = 0;
  void start() {
    before = detail::cuda::device_buffer_bytes();
    detail::cuda::reset_device_buffer_peak();
  }
  int64_t grown_during() const { return detail::cuda::device_buffer_peak_bytes() - before; }
  int64_t kept() const { return detail::cuda::device_buffer_bytes() - before; }
  /// The sizes allocated since start(), for a failure's message.
  static std::string allocations() {
    std::string out;
    for (int64_t bytes : detail::cuda::device_allocations_since_reset()) out += " " + std::to_string(bytes);
    return out.empty() ? " none" : out;
  }
};

TEST(DeviceViews, RepeatedOneShotSearchesAllocateNothing) {
  // 2048 x 300k keys would be a 2.4 GB key matrix in one tile: planned within the lease's kept memory instead.
  const int64_t nb = sized(int64_t(300000), int64_t(20000)), nq = sized(int64_t(2048), int64_t(256)), k = 50;
  for (bool integers : {true, false}) {  // the fused kernel (no key matrix), then cuBLAS + a selection
    SCOPED_TRACE(integers ? "integers" : "fractions");
    const HostMatrix<float> base = integers ? integer_matrix(nb, 32, 0, 255, 70) : random_matrix(nb, 32, 71);
    const HostMatrix<float> queries = integers ? integer_matrix(nq, 32, 0, 255, 72) : random_matrix(nq, 32, 73);
    const DeviceFloats db(base.data), dq(queries.data);
    const FloatView b = on_device(db, base.view()), q = on_device(dq, queries.view());
    const DeviceResult result(nq, k);
    const ResultView out = result.view();
    SearchParams p = cuda_params(k);
    SearchStats stats;
    p.stats = &stats;
    detail::cuda::reset_device_buffer_peak();
    search(b, q, p, out);  // the first call sizes the pipeline's buffers, and keeps them
    const int64_t first_retried = stats.guard_retried;  // fractions: the guard's queries searched again
    const std::string first_allocations = AllocationWatch::allocations();
    if (!integers) EXPECT_GT(stats.guard_candidates, k) << "the first call of float data was not guarded";
    for (int call = 0; call < sized(4, 2); ++call) {  // sanitized: 2 (racecheck 40 s with 4, 2026-11-25)
      AllocationWatch watch;
      watch.start();
      search(b, q, p, out);
      const std::string context = "call " + std::to_string(call) + " (guard candidates " +
                                  std::to_string(stats.guard_candidates) + ", retried " +
                                  std::to_string(stats.guard_retried) + " queries, the first call " +
                                  std::to_string(first_retried) + "; the first call allocated" + first_allocations +
                                  ")";
      EXPECT_EQ(0, watch.grown_during()) << context << " allocated during the search (bytes:"
                                         << AllocationWatch::allocations() << ")";
      EXPECT_EQ(0, watch.kept()) << context << " kept memory";
    }
  }
}

TEST(DeviceViews, RepeatedSearchesKeepADeviceBasesNorms) {
  // A device base's squared norms were allocated and freed by every call before the pipeline kept them. (Counted by
  // gknn, the norms need not outgrow cudaMemGetInfo's pages: 2^20 rows, 2^16 sanitized, where 4M rows took the tools
  // 85-101 s, 2026-11-25.)
  const int64_t nb = sized(int64_t(1) << 20, int64_t(1) << 16), nq = 16, k = 10;
  const HostMatrix<float> base = integer_matrix(nb, 4, 0, 9, 80), queries = integer_matrix(nq, 4, 0, 9, 81);
  const DeviceFloats db(base.data), dq(queries.data);
  const FloatView b = on_device(db, base.view()), q = on_device(dq, queries.view());
  const SearchParams p = cuda_params(k);
  const Result want = search(base.view(), queries.view(), p);
  (void)search(b, q, p);  // sizes the pipeline's buffers, the norms' included
  for (int call = 0; call < 3; ++call) {
    AllocationWatch watch;
    watch.start();
    const Result got = search(b, q, p);
    EXPECT_EQ(want.indices, got.indices);
    EXPECT_EQ(0, watch.grown_during()) << "call " << call << " allocated the norms again";
    EXPECT_EQ(0, watch.kept()) << "call " << call << " kept memory";
  }
}

// ---- select_k on device views ---------------------------------------------------------------------------------

/// A device copy of host int64 values (freed with the object).
struct DeviceLabels {
  int64_t* ptr = nullptr;
  explicit DeviceLabels(const std::vector<int64_t>& host) {
    EXPECT_EQ(cudaSuccess, cudaMalloc(&ptr, host.size() * sizeof(int64_t)));
    EXPECT_EQ(cudaSuccess, cudaMemcpy(ptr, host.data(), host.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  }
  ~DeviceLabels() { cudaFree(ptr); }
  DeviceLabels(const DeviceLabels&) = delete;
  DeviceLabels& operator=(const DeviceLabels&) = delete;
};


/// Identical results: the same indices, equal values (the total order's equality: -0.0 == +0.0; radix_select and
/// sample_select return a -0.0 key as +0.0, on host rows as on device views).
void expect_identical(const Result& want, const Result& got) {
  ASSERT_EQ(want.rows, got.rows);
  ASSERT_EQ(want.k, got.k);
  EXPECT_EQ(want.indices, got.indices);
  EXPECT_EQ(want.distances, got.distances);
}

/// Resets the tile override when a test ends.
struct TileGuard {
  explicit TileGuard(int64_t rows) { detail::cuda::set_tile_override({rows, 0}); }
  ~TileGuard() { detail::cuda::set_tile_override({}); }
};

/// Few distinct values (ties everywhere), +-inf rows, a row of -0.0 and +0.0 mixed; rows of `cols` values
/// `stride` apart (the padding holds NaN, which a selection that read it would return or reject).
std::vector<float> select_values(int64_t rows, int64_t cols, int64_t stride, uint64_t seed) {
  const HostMatrix<float> ints = integer_matrix(rows, cols, -3, 3, seed);
  std::vector<float> v(size_t(rows * stride), std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) v[size_t(i * stride + j)] = ints.row(i)[j];
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < cols; j += 3) v[size_t(std::min<int64_t>(1, rows - 1) * stride + j)] = inf;
  for (int64_t j = 0; j < cols; j += 4) v[size_t(std::min<int64_t>(2, rows - 1) * stride + j)] = -inf;
  for (int64_t j = 0; j < cols; ++j) v[size_t(std::min<int64_t>(3, rows - 1) * stride + j)] = j % 2 ? -0.f : 0.f;
  return v;
}

TEST(DeviceSelect, IdenticalToTheCpuSelection) {
  struct Shape {
    int64_t rows, cols, stride;
  };
  const Shape shapes[] = {{70, 300, 300}, {33, 1000, 1024}, {5, 4096, 4100}};
  for (const Shape& sh : shapes) {
    const std::vector<float> host = select_values(sh.rows, sh.cols, sh.stride, 90 + uint64_t(sh.cols));
    std::vector<int64_t> labels(host.size());
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t((i * 7919) % labels.size());  // distinct
    const DeviceFloats dv(host);
    const DeviceLabels dl(labels);
    const FloatView hv{host.data(), sh.rows, sh.cols, sh.stride};
    const FloatView v = on_device(dv, hv);
    for (int64_t k : {int64_t(1), int64_t(17), int64_t(256), sh.cols, sh.cols + 5}) {
      if (k > sh.cols + 5 || (k == 256 && k >= sh.cols)) continue;
      for (Order order : {Order::Ascending, Order::Descending}) {
        // Sanitized: descending at k = 17 only (every destination and both label modes; the other k ascending):
        // descending runs the same kernels on the other order's keys, and the test took racecheck and initcheck
        // 170 s with its shard, 2026-11-27.
        if (sanitize_mode() && order == Order::Descending && k != 17) continue;
        for (bool with_labels : {false, true}) {
          SCOPED_TRACE(std::to_string(sh.rows) + " x " + std::to_string(sh.cols) + " stride " +
                       std::to_string(sh.stride) + ", k = " + std::to_string(k) +
                       (order == Order::Descending ? ", descending" : ", ascending") + (with_labels ? ", labels" : ""));
          SelectParams cpu;
          cpu.backend = Backend::Cpu;
          const Result want = select_k(hv, with_labels ? labels.data() : nullptr, k, order, cpu);
          SelectParams cuda;
          cuda.backend = Backend::Cuda;
          const int64_t* device_labels = with_labels ? dl.ptr : nullptr;
          expect_identical(want, select_k(v, device_labels, k, order, cuda));  // device view -> Result
          DeviceResult out(sh.rows, k);
          select_k(v, device_labels, k, order, cuda, out.view());  // device view -> device storage
          expect_identical(want, out.download());
          Result host_out = want;  // device view -> host storage
          std::fill(host_out.indices.begin(), host_out.indices.end(), int64_t(-7));
          select_k(v, device_labels, k, order, SelectParams{}, detail::view_of(host_out));
          expect_identical(want, host_out);
          DeviceResult from_host(sh.rows, k);  // host rows -> device storage (uploaded, finalised there)
          select_k(hv, with_labels ? labels.data() : nullptr, k, order, cuda, from_host.view());
          expect_identical(want, from_host.download());
          // Every CUDA selector that serves k reads the view alike.
          // Sanitized: at k = 17, ascending (the selectors' kernels are the select suites'; synccheck took 83 s over
          // every k and order, 2026-11-25).
          if (sanitize_mode() && (k != 17 || order != Order::Ascending)) continue;
          for (const SelectCapability& c : select_algorithms(Backend::Cuda)) {
            if (c.max_k < std::min(k, sh.cols) || with_labels) continue;
            SCOPED_TRACE(to_string(c.algorithm));
            SelectParams one = cuda;
            one.algorithm = c.algorithm;
            expect_identical(want, select_k(v, nullptr, k, order, one));
          }
        }
      }
    }
  }
}

TEST(DeviceSelect, ManyTilesIdenticalToOne) {
  // Forced tiles of 7 rows: several tiles through the writer's two slots, the last one shorter, into a host
  // Result (pinned copy-out) and a device destination.
  const int64_t rows = 61, cols = 700;
  const std::vector<float> host = select_values(rows, cols, cols, 95);
  const DeviceFloats dv(host);
  const FloatView hv{host.data(), rows, cols, 0};
  const FloatView v = on_device(dv, hv);
  SelectParams cpu, cuda;
  cpu.backend = Backend::Cpu;
  cuda.backend = Backend::Cuda;
  for (Order order : {Order::Ascending, Order::Descending}) {
    const Result want = select_k(hv, nullptr, 40, order, cpu);
    const TileGuard tiles(7);
    expect_identical(want, select_k(v, nullptr, 40, order, cuda));
    DeviceResult out(rows, 40);
    select_k(v, nullptr, 40, order, cuda, out.view());
    expect_identical(want, out.download());
  }
}

TEST(DeviceSelect, NanGetsTheHostErrorAndInfinitiesAreValues) {
  const int64_t rows = 40, cols = 64;
  std::vector<float> host = select_values(rows, cols, cols, 97);
  host[size_t(13 * cols + 2)] = std::numeric_limits<float>::quiet_NaN();
  host[size_t(29 * cols + 5)] = std::numeric_limits<float>::quiet_NaN();  // a later NaN row: the first is named
  const DeviceFloats dv(host);
  const FloatView hv{host.data(), rows, cols, 0};
  auto message = [](FloatView values, Order order) -> std::string {
    try {
      (void)select_k(values, nullptr, 5, order);
    } catch (const Error& err) {
      EXPECT_EQ(ErrorCode::InvalidArgument, err.code());
      return err.what();
    }
    ADD_FAILURE() << "a NaN was accepted";
    return "";
  };
  const std::string want = message(hv, Order::Ascending);
  EXPECT_NE(std::string::npos, want.find("row 13 column 2")) << want;
  EXPECT_EQ(want, message(on_device(dv, hv), Order::Ascending));
  EXPECT_EQ(want, message(on_device(dv, hv), Order::Descending));
  // The rows before the NaN (with +-inf) select as on the CPU.
  SelectParams cpu;
  cpu.backend = Backend::Cpu;
  const FloatView head{host.data(), 13, cols, 0};
  expect_identical(select_k(head, nullptr, 9, Order::Descending, cpu),
                   select_k(on_device(dv, head), nullptr, 9, Order::Descending));
}

TEST(DeviceSelect, ArgumentErrors) {
  const std::vector<float> host = select_values(10, 32, 32, 99);
  const DeviceFloats dv(host);
  const FloatView v = on_device(dv, FloatView{host.data(), 10, 32, 0});
  auto code = [](auto&& call) -> ErrorCode {
    try {
      call();
    } catch (const Error& err) {
      return err.code();
    }
    return ErrorCode::Internal;  // "no error": never the code of an argument error
  };
  SelectParams cpu;
  cpu.backend = Backend::Cpu;
  EXPECT_EQ(ErrorCode::InvalidArgument, code([&] { (void)select_k(v, nullptr, 0, Order::Ascending); }));
  EXPECT_EQ(ErrorCode::InvalidArgument, code([&] { (void)select_k(v, nullptr, 3, Order::Ascending, cpu); }));
  FloatView narrow = v;
  narrow.stride = 16;  // below the row length
  EXPECT_EQ(ErrorCode::InvalidArgument, code([&] { (void)select_k(narrow, nullptr, 3, Order::Ascending); }));
  DeviceResult out(10, 3);
  ResultView wrong = out.view();
  wrong.k = 4;  // shaped unlike the selection
  EXPECT_EQ(ErrorCode::InvalidArgument, code([&] { select_k(v, nullptr, 3, Order::Ascending, {}, wrong); }));
  SelectParams heap;
  heap.algorithm = SelectAlgorithm::Heap;  // a CPU-only selector cannot read device memory
  EXPECT_EQ(ErrorCode::Unsupported, code([&] { (void)select_k(v, nullptr, 3, Order::Ascending, heap); }));
  const Result empty = select_k(FloatView{dv.ptr, 0, 32, 0, Memory::Device}, nullptr, 3, Order::Ascending);
  EXPECT_EQ(0, empty.rows);
  EXPECT_EQ(3, empty.k);
}

}  // namespace
}  // namespace gknn::testing
