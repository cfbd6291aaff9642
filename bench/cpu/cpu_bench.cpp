// cpu_bench.cpp: times gknn's CPU search on raw float32 files, for bench/cpu/faiss_compare.py.
//
// Usage: gknn_cpu_bench BASE.bin QUERIES.bin DIM K [options]
//   --repeats R      timed runs after one warm-up (default 5); the median is reported
//   --metric NAME    default squared_l2;  --p P  exponent of lp (default 2)
//   --distance NAME  default auto;  --select NAME  default auto
//   --threads T      default 0 (all);  --budget BYTES  default 0 (automatic)
//   --out PATH       writes the int64 indices (q x k, raw) of the last run
// Prints one line of key=value pairs: median_s, min_s, max_s (wall), cpu_median_s (process CPU time), and the
// configuration.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "gknn/error.hpp"
#include "gknn/search.hpp"

namespace {

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  GKNN_EXPECT(in, gknn::ErrorCode::Io, "cannot open '", path, "'");
  const std::streamsize bytes = in.tellg();
  GKNN_EXPECT(bytes % 4 == 0, gknn::ErrorCode::Format, "'", path, "' is not a whole number of float32 values");
  std::vector<float> values(static_cast<size_t>(bytes / 4));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), bytes);
  GKNN_EXPECT(in, gknn::ErrorCode::Io, "cannot read '", path, "'");
  return values;
}

gknn::FloatView as_matrix(const std::vector<float>& values, int64_t dim, const std::string& what) {
  GKNN_EXPECT(values.size() % size_t(dim) == 0, gknn::ErrorCode::Format, what, ": ", values.size(),
              " values are not rows of dimension ", dim);
  return {values.data(), int64_t(values.size()) / dim, dim, dim};
}

int run(int argc, char** argv) {
  GKNN_EXPECT(argc >= 5, gknn::ErrorCode::InvalidArgument,
              "usage: gknn_cpu_bench BASE.bin QUERIES.bin DIM K [options]");
  const int64_t dim = std::stoll(argv[3]);
  gknn::SearchParams params;
  params.backend = gknn::Backend::Cpu;
  params.k = std::stoll(argv[4]);
  int repeats = 5;
  std::string out_path;
  for (int i = 5; i + 1 < argc; i += 2) {
    const std::string opt = argv[i], value = argv[i + 1];
    if (opt == "--repeats")
      repeats = std::stoi(value);
    else if (opt == "--metric")
      params.metric = gknn::parse_metric(value);
    else if (opt == "--p")
      params.p = std::stod(value);
    else if (opt == "--distance")
      params.distance = gknn::parse_distance(value);
    else if (opt == "--select")
      params.select = gknn::parse_select(value);
    else if (opt == "--threads")
      params.threads = std::stoi(value);
    else if (opt == "--budget")
      params.memory_budget = std::stoull(value);
    else if (opt == "--out")
      out_path = value;
    else
      gknn::detail::fail(gknn::ErrorCode::InvalidArgument, "unknown option ", opt);
  }
  GKNN_EXPECT(repeats >= 1, gknn::ErrorCode::InvalidArgument, "--repeats must be >= 1 (got ", repeats, ")");
  const std::vector<float> base_values = read_floats(argv[1]), query_values = read_floats(argv[2]);
  const gknn::FloatView base = as_matrix(base_values, dim, "base"), queries = as_matrix(query_values, dim, "queries");

  gknn::Result result = gknn::search(base, queries, params);  // warm-up: page faults, OpenBLAS and OpenMP pools
  std::vector<double> seconds, cpu_seconds;  // wall time, and process CPU time (robust on a busy machine)
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    result = gknn::search(base, queries, params);
    cpu_seconds.push_back(double(std::clock() - cpu_start) / CLOCKS_PER_SEC);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(cpu_seconds.begin(), cpu_seconds.end());
  if (!out_path.empty()) {
    std::ofstream out(out_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(result.indices.data()), std::streamsize(result.indices.size() * 8));
    GKNN_EXPECT(out, gknn::ErrorCode::Io, "cannot write '", out_path, "'");
  }
  std::printf(
      "median_s=%.6f min_s=%.6f max_s=%.6f cpu_median_s=%.6f n=%lld q=%lld d=%lld k=%lld distance=%s select=%s "
      "threads=%d\n",
      seconds[seconds.size() / 2], seconds.front(), seconds.back(), cpu_seconds[cpu_seconds.size() / 2],
      (long long)base.rows, (long long)queries.rows, (long long)dim, (long long)params.k,
      gknn::to_string(params.distance).c_str(), gknn::to_string(params.select).c_str(), params.threads);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gknn_cpu_bench: %s\n", e.what());
    return 1;
  }
}
