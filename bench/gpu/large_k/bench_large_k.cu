// bench_large_k.cu: large-k selection on the device (thesis 5.5): sample select and radix select, single- and
// two-stage, each with and without the sampled bracket (gknn, "+bracket"), sorted and unsorted output, against the full segmented sort (SelectAlgorithm::Sort, when the
// build has it). Keys are uniform [0, 1) floats generated on the device from a fixed seed; each measurement
// is the median of --reps runs timed with CUDA events after --warmup runs. Writes a CSV and a markdown table;
// bench/gpu/large_k/torch_topk.py measures torch.topk on the same shapes, plot.py draws both.
//
//   gknn_large_k_bench [--quick] [--reps N] [--warmup N] [--device D] [--csv FILE] [--md FILE] [--shape QxN]...
//                      [--k LIST] [--filter TEXT]   (--filter matches "radix_select/single_stage sorted" etc.)
// A .cu file (not .cpp) because it generates its data with a small kernel.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cuda/common/buffer.cuh"
#include "cuda/select/select.cuh"
#include "gknn/error.hpp"
#include "../common/command_line.hpp"
#include "../common/fill_uniform.cuh"
#include "../common/timing.cuh"

namespace {

using namespace gknn;
using namespace gknn::detail::cuda;

struct Args : bench::CommonArgs {
  Args() {
    reps = 10;
    warmup = 2;
    csv = "bench/results/large_k.csv";
    md = "bench/results/large_k.md";
  }
};

const bench::CommandLine kCommandLine("gknn_large_k_bench",
                                      "[--quick] [--reps N] [--warmup N] [--device D] [--csv FILE] [--md FILE] "
                                      "[--shape QxN]... [--k LIST] [--filter TEXT]");

Args parse(int argc, char** argv) {
  Args a;
  kCommandLine.parse(argc, argv, a, [](const std::string&, auto&&) { return false; });
  return a;
}

using gknn::bench::fill_uniform;

struct Method {
  SelectAlgorithm algorithm;
  bool two_stage;
  bool sorted;
  bool bracket;  ///< the sampled bracket first (gknn); false: the thesis' passes alone
  std::string name() const {
    std::string n = to_string(algorithm);
    if (algorithm != SelectAlgorithm::Sort) n += std::string(two_stage ? "/two_stage" : "/single_stage") + (bracket ? "+bracket" : "");
    return n;
  }
};

struct Row {
  int64_t rows, cols, k;
  Method method;
  double ms;  ///< < 0: not run (reason in note)
  std::string note;
};

/// Median milliseconds of one method on one problem.
double time_method(const SelectEntry& entry, const Method& m, const SelectInput& in, int64_t k, const SelectOutput& out,
                   Workspace& ws, const Stream& stream, const Args& args) {
  SelectOptions options;
  options.sorted = m.sorted;
  options.two_stage = m.two_stage;
  options.sampled_bracket = m.bracket;
  const SelectContext ctx{options, ws, stream.get(), args.device};
  return bench::time_ms([&] { entry.run(in, k, out, ctx); }, stream, {args.warmup, args.reps});
}

std::vector<int64_t> k_values(int64_t n) {
  std::vector<int64_t> ks = {2048, 4096, 16384, n / 10, n / 3, n / 2};
  ks.erase(std::remove_if(ks.begin(), ks.end(), [&](int64_t k) { return k < 1 || k > n; }), ks.end());
  return ks;
}

void write_reports(const std::vector<Row>& rows, const Args& args) {
  std::ofstream csv(args.csv);
  if (!csv) std::fprintf(stderr, "cannot write %s\n", args.csv.c_str());
  csv << "rows,cols,k,method,sorted,ms,gkeys_per_s,note\n";
  std::ofstream md(args.md);
  if (!md) std::fprintf(stderr, "cannot write %s\n", args.md.c_str());
  md << "| q x n | k | method | sorted | ms (median) | G keys/s |\n|---|---:|---|---|---:|---:|\n";
  for (const Row& r : rows) {
    const double gkeys = r.ms > 0 ? double(r.rows) * double(r.cols) / (r.ms * 1e6) : 0.0;
    csv << r.rows << ',' << r.cols << ',' << r.k << ',' << r.method.name() << ',' << (r.method.sorted ? 1 : 0) << ','
        << r.ms << ',' << gkeys << ',' << r.note << '\n';
    char line[256];
    if (r.ms > 0)
      std::snprintf(line, sizeof line, "| %lld x %lld | %lld | %s | %s | %.3f | %.2f |\n", (long long)r.rows,
                    (long long)r.cols, (long long)r.k, r.method.name().c_str(), r.method.sorted ? "yes" : "no", r.ms,
                    gkeys);
    else
      std::snprintf(line, sizeof line, "| %lld x %lld | %lld | %s | %s | %s | |\n", (long long)r.rows,
                    (long long)r.cols, (long long)r.k, r.method.name().c_str(), r.method.sorted ? "yes" : "no",
                    r.note.c_str());
    md << line;
  }
  std::printf("wrote %s and %s\n", args.csv.c_str(), args.md.c_str());
}

int run(const Args& args) {
  GKNN_CUDA_TRY(cudaSetDevice(args.device));
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      !args.shapes.empty() ? args.shapes
      : args.quick ? std::vector<std::pair<int64_t, int64_t>>{{64, int64_t{1} << 18}, {1024, int64_t{1} << 15}}
                 : std::vector<std::pair<int64_t, int64_t>>{{1000, int64_t{1} << 20}, {8192, int64_t{1} << 17}};
  std::vector<Method> methods;
  for (bool sorted : {true, false})
    for (SelectAlgorithm a : {SelectAlgorithm::SampleSelect, SelectAlgorithm::RadixSelect})
      for (bool two_stage : {true, false})
        for (bool bracket : {false, true}) methods.push_back({a, two_stage, sorted, bracket});
  methods.push_back({SelectAlgorithm::Sort, true, true, false});

  std::vector<Row> report;
  Workspace ws;
  Stream stream;
  for (auto [rows, cols] : shapes) {
    DeviceBuffer<float> keys(static_cast<size_t>(rows * cols));
    fill_uniform<<<1024, 256, 0, stream.get()>>>(keys.data(), rows * cols, 0x1A46E5EEDull);
    GKNN_CUDA_CHECK_LAUNCH();
    stream.sync();
    const SelectInput in{keys.data(), nullptr, cols, rows, cols, 0};
    for (int64_t k : args.ks.empty() ? k_values(cols) : args.ks) {
      if (k > cols) continue;
      DeviceBuffer<float> out_keys(static_cast<size_t>(rows * k));
      DeviceBuffer<int64_t> out_labels(static_cast<size_t>(rows * k));
      const SelectOutput out{out_keys.data(), out_labels.data(), k};
      for (const Method& m : methods) {
        if (!args.wanted(m.name() + (m.sorted ? " sorted" : " unsorted"))) continue;
        Row r{rows, cols, k, m, -1.0, ""};
        const SelectEntry* entry = find_select(m.algorithm);
        if (!entry) r.note = "not in this build";
        else if (entry->max_k < k) r.note = "k above max_k";
        else {
          try {
            r.ms = time_method(*entry, m, in, k, out, ws, stream, args);
          } catch (const gknn::Error& e) {
            r.note = std::string("failed: ") + e.what();
            std::replace(r.note.begin(), r.note.end(), ',', ';');
          }
        }
        std::printf("%6lld x %-8lld k=%-8lld %-28s %-8s %10.3f ms %s\n", (long long)rows, (long long)cols, (long long)k,
                    m.name().c_str(), m.sorted ? "sorted" : "unsorted", r.ms, r.note.c_str());
        std::fflush(stdout);
        report.push_back(r);
      }
    }
  }
  write_reports(report, args);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return kCommandLine.guarded([&] { return run(parse(argc, argv)); });
}
