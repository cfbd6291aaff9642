// bench_select.cu: small-k selection on the device (issue 4; thesis 5.3-5.4): partial_bitonic, warp_select,
// block_select, bits (with and without the L2 prefetch) and bits_global on q x n rows of uniform float keys
// generated on the device from a fixed seed. Each measurement is the median of --reps runs timed with CUDA
// events after --warmup runs; throughput is given in keys/s and as a share of the read bandwidth measured in
// the same run (a read-only float4 reduction over a 2 GiB buffer; cudaMemcpy D2D is reported beside it).
// bench/gpu/select_small/torch_topk.py measures torch.topk on the same shapes, plot.py draws both.
//
//   gknn_select_bench [--quick] [--sweep-thread-queue] [--parts P] [--reps N] [--warmup N] [--device D]
//                     [--csv FILE] [--md FILE] [--shape QxN]... [--k LIST] [--filter TEXT]
// --parts P: bits / bits_global split every row into P segments (0: the library's choice), to measure the split.
// --sweep-thread-queue: warp_select / block_select at every thread-queue length 2..10 per k on 1024 x 2^20
// (the lengths a build leaves out are reported as such; configure with -DGKNN_SELECT_TUNING=ON for all), to
// choose the defaults in src/cuda/select/warp_select/thread_queue_defaults.hpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
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
  bool sweep = false;
  int parts = 0;
  Args() {
    reps = 7;
    warmup = 2;
    csv = "bench/results/select_small.csv";
    md = "bench/results/select_small.md";
  }
};

const bench::CommandLine kCommandLine("gknn_select_bench",
                                      "[--quick] [--sweep-thread-queue] [--parts P] [--reps N] [--warmup N] "
                                      "[--device D] [--csv FILE] [--md FILE] [--shape QxN]... [--k LIST] "
                                      "[--filter TEXT]");

Args parse(int argc, char** argv) {
  Args a;
  kCommandLine.parse(argc, argv, a, [&](const std::string& s, auto&& value) {
    if (s == "--sweep-thread-queue") a.sweep = true;
    else if (s == "--parts") a.parts = std::max(0, std::atoi(value().c_str()));
    else return false;
    return true;
  });
  return a;
}

using gknn::bench::fill_uniform;

/// Read-only reduction: the bandwidth a selection kernel could at best reach (it reads every key once).
__global__ void read_sum(const float4* data, int64_t count4, float* out) {
  float s = 0.f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count4; i += int64_t{gridDim.x} * blockDim.x) {
    const float4 v = __ldcs(data + i);
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 12345.678f) out[0] = s;  // keeps the loads alive; practically never true
}

double time_ms(const std::function<void()>& launch, const Stream& stream, const Args& args) {
  return bench::time_ms(launch, stream, {args.warmup, args.reps});
}

struct Bandwidth {
  double read_gbs, copy_gbs;  ///< 1e9 bytes/s; copy counts read + write
};

Bandwidth measure_bandwidth(const Stream& stream, const Args& args) {
  const size_t bytes = size_t(2) << 30;
  DeviceBuffer<float> a(bytes / sizeof(float)), b(bytes / sizeof(float));
  DeviceBuffer<float> sink(1);
  fill_uniform<<<1024, 256, 0, stream.get()>>>(a.data(), int64_t(a.size()), 1);
  GKNN_CUDA_CHECK_LAUNCH();
  int sms = 0;
  GKNN_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, args.device));
  const double read_ms = time_ms(
      [&] {
        read_sum<<<sms * 8, 512, 0, stream.get()>>>(reinterpret_cast<const float4*>(a.data()),
                                                    int64_t(bytes / 16), sink.data());
        GKNN_CUDA_CHECK_LAUNCH();
      },
      stream, args);
  const double copy_ms = time_ms(
      [&] { GKNN_CUDA_TRY(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream.get())); },
      stream, args);
  return {double(bytes) / (read_ms * 1e6), 2.0 * double(bytes) / (copy_ms * 1e6)};
}

struct Variant {
  SelectAlgorithm algorithm;
  bool prefetch;
  int thread_queue;  ///< 0: the tuned default
  std::string name() const {
    std::string n = to_string(algorithm);
    if (prefetch) n += "+prefetch";
    if (thread_queue) n += "/tq" + std::to_string(thread_queue);
    return n;
  }
};

struct Row {
  int64_t q, n, k;
  Variant variant;
  double ms;  ///< < 0: not run (reason in note)
  std::string note;
};

void write_reports(const std::vector<Row>& rows, const Bandwidth& bw, const Args& args) {
  std::ofstream csv(args.csv);
  if (!csv) std::fprintf(stderr, "cannot write %s\n", args.csv.c_str());
  csv << "implementation,algorithm,thread_queue,prefetch,q,n,k,ms,gkeys_per_s,gbytes_per_s,pct_read_bw,note\n";
  for (const Row& r : rows) {
    const double gkeys = r.ms > 0 ? double(r.q) * double(r.n) / (r.ms * 1e6) : 0.0;
    csv << "gknn," << r.variant.name() << ',' << r.variant.thread_queue << ',' << (r.variant.prefetch ? 1 : 0) << ','
        << r.q << ',' << r.n << ',' << r.k << ',' << r.ms << ',' << gkeys << ',' << 4 * gkeys << ','
        << 100.0 * 4 * gkeys / bw.read_gbs << ',' << r.note << '\n';
  }
  // Markdown: one table per shape, algorithms down, k across, "G keys/s (% of read bandwidth)".
  std::ofstream md(args.md);
  if (!md) std::fprintf(stderr, "cannot write %s\n", args.md.c_str());
  char line[512];
  std::snprintf(line, sizeof line,
                "Measured read bandwidth: %.1f GB/s (float4 reduction over 2 GiB); cudaMemcpy D2D: %.1f GB/s "
                "(read + write).\n",
                bw.read_gbs, bw.copy_gbs);
  md << line;
  std::map<std::pair<int64_t, int64_t>, std::vector<const Row*>> by_shape;
  for (const Row& r : rows) by_shape[{r.q, r.n}].push_back(&r);
  for (const auto& [shape, list] : by_shape) {
    std::vector<int64_t> ks;
    std::vector<std::string> names;
    for (const Row* r : list) {
      if (std::find(ks.begin(), ks.end(), r->k) == ks.end()) ks.push_back(r->k);
      if (std::find(names.begin(), names.end(), r->variant.name()) == names.end()) names.push_back(r->variant.name());
    }
    std::sort(ks.begin(), ks.end());
    md << "\n### q x n = " << shape.first << " x " << shape.second << "\n\n| algorithm |";
    for (int64_t k : ks) md << " k=" << k << " |";
    md << "\n|---|";
    for (size_t i = 0; i < ks.size(); ++i) md << "---:|";
    md << '\n';
    for (const std::string& name : names) {
      md << "| " << name << " |";
      for (int64_t k : ks) {
        const Row* hit = nullptr;
        for (const Row* r : list)
          if (r->k == k && r->variant.name() == name) hit = r;
        if (!hit || hit->ms <= 0) {
          md << " - |";
          continue;
        }
        const double gkeys = double(hit->q) * double(hit->n) / (hit->ms * 1e6);
        std::snprintf(line, sizeof line, " %.1f (%.0f%%) |", gkeys, 100.0 * 4 * gkeys / bw.read_gbs);
        md << line;
      }
      md << '\n';
    }
  }
  std::printf("wrote %s and %s\n", args.csv.c_str(), args.md.c_str());
}

int run(const Args& args) {
  GKNN_CUDA_TRY(cudaSetDevice(args.device));
  Stream stream;
  const Bandwidth bw = measure_bandwidth(stream, args);
  std::printf("read bandwidth %.1f GB/s, D2D copy %.1f GB/s\n", bw.read_gbs, bw.copy_gbs);

  using Shape = std::pair<int64_t, int64_t>;
  std::vector<Shape> shapes = args.quick
                                  ? std::vector<Shape>{{128, int64_t{1} << 20}, {1024, int64_t{1} << 17}, {1, int64_t{1} << 24}}
                                  : std::vector<Shape>{{1024, int64_t{1} << 20}, {8192, int64_t{1} << 17}, {1, int64_t{1} << 27}};
  std::vector<int64_t> ks = args.quick ? std::vector<int64_t>{1, 32, 2048, 4096}
                                       : std::vector<int64_t>{1, 8, 32, 128, 512, 2048, 4096};
  std::vector<Variant> variants;
  if (args.sweep) {
    shapes = {args.quick ? Shape{128, int64_t{1} << 20} : Shape{1024, int64_t{1} << 20}};
    for (SelectAlgorithm a : {SelectAlgorithm::WarpSelect, SelectAlgorithm::BlockSelect})
      for (int tq = 2; tq <= 10; ++tq) variants.push_back({a, false, tq});
  } else {
    for (SelectAlgorithm a : {SelectAlgorithm::PartialBitonic, SelectAlgorithm::WarpSelect,
                              SelectAlgorithm::BlockSelect, SelectAlgorithm::Bits, SelectAlgorithm::BitsGlobal})
      variants.push_back({a, false, 0});
    variants.push_back({SelectAlgorithm::Bits, true, 0});
  }
  if (!args.shapes.empty()) shapes = args.shapes;
  if (!args.ks.empty()) ks = args.ks;
  std::sort(ks.begin(), ks.end());
  variants.erase(std::remove_if(variants.begin(), variants.end(), [&](const Variant& v) { return !args.wanted(v.name()); }),
                 variants.end());

  int64_t max_elems = 0, max_out = 0;
  for (auto [q, n] : shapes) max_elems = std::max(max_elems, q * n), max_out = std::max(max_out, q * ks.back());
  DeviceBuffer<float> keys(static_cast<size_t>(max_elems));
  fill_uniform<<<4096, 256, 0, stream.get()>>>(keys.data(), max_elems, 0x5E1EC7ull);
  GKNN_CUDA_CHECK_LAUNCH();
  DeviceBuffer<float> out_keys(static_cast<size_t>(max_out));
  DeviceBuffer<int64_t> out_labels(static_cast<size_t>(max_out));
  stream.sync();

  std::vector<Row> report;
  Workspace ws;
  for (auto [q, n] : shapes) {
    const SelectInput in{keys.data(), nullptr, n, q, n, 0};
    for (int64_t k : ks) {
      const SelectOutput out{out_keys.data(), out_labels.data(), k};
      for (const Variant& v : variants) {
        Row r{q, n, k, v, -1.0, ""};
        const SelectEntry* entry = find_select(v.algorithm);
        if (!entry) r.note = "not in this build";
        else if (entry->max_k < k) r.note = "k above max_k";
        else {
          SelectOptions options;
          options.prefetch = v.prefetch;
          options.overrides.thread_queue = v.thread_queue;
          options.overrides.split_parts = args.parts;
          const SelectContext ctx{options, ws, stream.get(), args.device};
          try {
            r.ms = time_ms([&] { entry->run(in, k, out, ctx); }, stream, args);
          } catch (const gknn::Error& e) {
            r.note = std::string("not run: ") + e.what();
            std::replace(r.note.begin(), r.note.end(), ',', ';');
          }
        }
        const double gkeys = r.ms > 0 ? double(q) * double(n) / (r.ms * 1e6) : 0.0;
        std::printf("%5lld x %-10lld k=%-5lld %-26s %9.3f ms %8.1f Gkeys/s %5.1f%% %s\n", (long long)q, (long long)n,
                    (long long)k, v.name().c_str(), r.ms, gkeys, 100.0 * 4 * gkeys / bw.read_gbs, r.note.c_str());
        std::fflush(stdout);
        report.push_back(r);
      }
    }
  }
  write_reports(report, bw, args);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return kCommandLine.guarded([&] { return run(parse(argc, argv)); });
}
