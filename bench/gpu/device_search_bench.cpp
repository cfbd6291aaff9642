// device_search_bench.cpp: one exact search from C++ on the data of two .npy files, the way the Python module
// runs it, so that bench/gpu/python_search.py can set the two side by side on identical data (issue 15).
//
// Three ways of calling gknn, each after one warm-up call, --repeats timed calls, median reported:
//   device:      base, queries and results in device memory (gknn::search with Memory::Device views): what
//                gknn.search does with torch/cupy CUDA tensors;
//   index_device: a cuda gknn::Index added from the device base, device queries and outputs: gknn.Index with
//                torch/cupy CUDA tensors;
//   index:       a resident gknn::Index (base added once), host queries in, host Result out: gknn.Index with numpy;
//   host_search: gknn::search on host arrays (the base uploaded by every call): gknn.search with numpy.
// Per call: the wall time of the (synchronous) call, and CUDA events recorded on the legacy stream just before and
// just after it, gknn's phase times (SearchStats) of the median call, and the plan gknn chose (explain_search;
// device views get their value facts from a scan on the device, host arrays from the host scan). "device_again" times the device call once more at the end,
// with the index still held.
// Output: one JSON object on stdout; --indices FILE.npy writes the device search's indices (int64, q x k).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/io.hpp"
#include "gknn/search.hpp"
#include "common/command_line.hpp"

namespace {

using namespace gknn;

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "device_search_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Options {
  std::string base, queries, indices;
  int64_t k = 100;
  int repeats = 9;
};

const bench::CommandLine kCommandLine("gknn_device_search_bench",
                                       "--base B.npy --queries Q.npy [-k K] [--repeats N] [--indices OUT.npy]");

Options parse(int argc, char** argv) {
  Options o;
  bench::CommonArgs unused;  // the selection benchmarks' options: accepted, not used here
  kCommandLine.parse(argc, argv, unused, [&](const std::string& a, auto&& value) {
    if (a == "--base") o.base = value();
    else if (a == "--queries") o.queries = value();
    else if (a == "-k") o.k = std::atoll(value().c_str());
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(value().c_str()));
    else if (a == "--indices") o.indices = value();
    else return false;
    return true;
  });
  if (o.base.empty() || o.queries.empty()) kCommandLine.fail("--base and --queries are required");
  return o;
}

struct Timing {
  std::vector<double> wall_ms, event_ms;
  std::vector<SearchStats> stats;  ///< gknn's phase times of each timed call
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// One warm-up call (context, cached pipelines, buffers), then `repeats` timed calls; `call` fills *stats.
Timing time_calls(const std::function<void(SearchStats*)>& call, int repeats) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  SearchStats warm;
  call(&warm);
  cuda_check(cudaDeviceSynchronize(), "warm-up");
  Timing t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cuda_check(cudaEventRecord(start, nullptr), "cudaEventRecord");
    SearchStats stats;
    call(&stats);
    cuda_check(cudaEventRecord(stop, nullptr), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    t.wall_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    t.event_ms.push_back(ms);
    t.stats.push_back(stats);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

void print_mode(const char* name, const Timing& t, const SearchPlan& plan, bool last) {
  // gknn's phases of the call whose wall time is the median (the upper one for an even count).
  std::vector<size_t> order(t.wall_ms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.wall_ms[a] < t.wall_ms[b]; });
  const SearchStats& s = t.stats[order[order.size() / 2]];
  std::printf("  \"%s\": {\"median_wall_ms\": %.4f, \"median_event_ms\": %.4f, \"distance\": \"%s\", "
              "\"select\": \"%s\",\n    \"phases_ms\": {\"check\": %.3f, \"setup\": %.3f, \"upload\": %.3f, "
              "\"distance\": %.3f, \"select\": %.3f, \"merge\": %.3f, \"download\": %.3f, \"finalize\": %.3f, "
              "\"device\": %.3f, \"total\": %.3f}, \"query_tiles\": %lld, \"base_tiles\": %lld,\n    \"wall_ms\": [",
              name, median(t.wall_ms), median(t.event_ms), to_string(plan.distance).c_str(),
              to_string(plan.select).c_str(), s.check_ms, s.setup_ms, s.upload_ms, s.distance_ms, s.select_ms,
              s.merge_ms, s.download_ms, s.finalize_ms, s.device_ms, s.total_ms,
              static_cast<long long>(s.query_tiles), static_cast<long long>(s.base_tiles));
  for (size_t i = 0; i < t.wall_ms.size(); ++i) std::printf("%s%.4f", i ? ", " : "", t.wall_ms[i]);
  std::printf("]}%s\n", last ? "" : ",");
}

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  cuda_check(cudaMalloc(&p, host.size() * sizeof(T)), "cudaMalloc");
  cuda_check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return p;
}

int run(const Options& o) {
  const HostMatrix<float> base = read_npy_float(o.base), queries = read_npy_float(o.queries);
  const int64_t q = queries.rows, k = o.k;
  SearchParams params;
  params.k = k;
  params.backend = Backend::Cuda;

  const FloatView base_host = base.view(), queries_host = queries.view();
  float* base_dev = device_copy(base.data);
  float* queries_dev = device_copy(queries.data);
  float* dist_dev = nullptr;
  int64_t* idx_dev = nullptr;
  cuda_check(cudaMalloc(&dist_dev, static_cast<size_t>(q * k) * sizeof(float)), "cudaMalloc");
  cuda_check(cudaMalloc(&idx_dev, static_cast<size_t>(q * k) * sizeof(int64_t)), "cudaMalloc");
  const FloatView base_view{base_dev, base.rows, base.cols, base.cols, Memory::Device};
  const FloatView queries_view{queries_dev, q, queries.cols, queries.cols, Memory::Device};
  const ResultView out{dist_dev, idx_dev, q, k, Memory::Device};

  auto with_stats = [&params](SearchStats* stats) {
    SearchParams p = params;
    p.stats = stats;
    return p;
  };
  auto device_call = [&](SearchStats* st) { search(base_view, queries_view, with_stats(st), out); };
  const Timing device = time_calls(device_call, o.repeats);
  const SearchPlan device_plan = explain_search(base_view, queries_view, params);
  Timing index_device;

  {  // a cuda Index filled from the device view (device to device) and searched with device queries and outputs
    Index on_device(base.cols, Metric::SquaredL2, Backend::Cuda);
    on_device.add(base_view);
    index_device = time_calls([&](SearchStats* st) { on_device.search(queries_view, with_stats(st), out); },
                              o.repeats);
  }
  Index index(base.cols, Metric::SquaredL2, Backend::Cuda);
  index.add(base_host);
  const Timing resident = time_calls([&](SearchStats* st) { (void)index.search(queries_host, with_stats(st)); },
                                     o.repeats);
  const Timing host = time_calls([&](SearchStats* st) { (void)search(base_host, queries_host, with_stats(st)); },
                                 o.repeats);
  // The device call again, now that the process also holds the index: does its time depend on what else is held?
  const Timing device_again = time_calls(device_call, o.repeats);
  const SearchPlan host_plan = explain_search(base_host, queries_host, params);

  if (!o.indices.empty()) {
    HostMatrix<int64_t> ids(q, k);
    cuda_check(cudaMemcpy(ids.data.data(), idx_dev, ids.data.size() * sizeof(int64_t), cudaMemcpyDeviceToHost),
               "download");
    write_npy(o.indices, ids.view());
  }
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("{\n  \"gpu\": \"%s\", \"rows\": %lld, \"queries\": %lld, \"dim\": %lld, \"k\": %lld, \"repeats\": %d,\n",
              prop.name, static_cast<long long>(base.rows), static_cast<long long>(q),
              static_cast<long long>(base.cols), static_cast<long long>(k), o.repeats);
  print_mode("device", device, device_plan, false);
  print_mode("index_device", index_device, device_plan, false);
  print_mode("index", resident, host_plan, false);
  print_mode("host_search", host, host_plan, false);
  print_mode("device_again", device_again, device_plan, true);
  std::printf("}\n");
  cudaFree(base_dev);
  cudaFree(queries_dev);
  cudaFree(dist_dev);
  cudaFree(idx_dev);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return kCommandLine.guarded([&] { return run(parse(argc, argv)); }); }
