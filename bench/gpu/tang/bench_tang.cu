// bench_tang.cu: Tang et al.'s Table I on the device. The 24 queue combinations (insertion / heap / merge x
// aligned x buffered x hp) over Q = 2^13 rows of uniform [0, 1) keys (distance-matrix-like, generated on the
// device from a fixed seed), with bits as the GPU peer, the CPU heap (gknn::select_k, Backend::Cpu, every
// host thread) and the device-to-host copy a CPU selection would need as columns, and torch.topk (measured by
// torch_topk.py on the same keys' shapes) merged in from its CSV.
//
// Grids: the paper's two sweeps (default: k = 2^5..2^10 at N = 2^15, N = 2^13..2^16 at k = 2^8), --full (all
// 24 (N, k) pairs), --quick (Q = 2^10, three cells: a smoke test). Every GPU time is the median of --reps runs
// timed with CUDA events after --warmup runs, and includes everything the selection launches (for hp: the
// bottom-up construction, as in the paper). A run slower than --slow-ms is measured once. Every result is
// compared with the first method's on the same cell (all must be identical: one total order), reported in
// the "check" column. The hierarchical partition's memory cost is printed per cell.
//
//   gknn_tang_bench [--quick] [--full] [--reps N] [--warmup N] [--m M] [--group G] [--no-cpu] [--slow-ms MS]
//                   [--device D] [--csv FILE] [--md FILE] [--torch-csv FILE]
// Reports default to bench/results/tang.{csv,md}, or $OUT/tang.{csv,md} when OUT is set (then
// $OUT/tang_torch.csv, if present, is the default --torch-csv).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cpu_baseline.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/select/select.cuh"
#include "cuda/select/tang/layout.hpp"
#include "gknn/error.hpp"
#include "../common/command_line.hpp"
#include "../common/fill_uniform.cuh"
#include "../common/timing.cuh"

namespace {

using namespace gknn;
using namespace gknn::detail::cuda;

struct Args : bench::CommonArgs {
  bool full = false;
  bool cpu = true;
  int m = 8;
  int group = 4;
  double slow_ms = 2000.0;
  std::string torch_csv;  ///< optional: torch_topk.py's CSV, merged into the table
  Args() {
    reps = 5;
    warmup = 1;
    csv = "bench/results/tang.csv";
    md = "bench/results/tang.md";
  }
};

const bench::CommandLine kCommandLine("gknn_tang_bench",
                                      "[--quick] [--full] [--reps N] [--warmup N] [--m M] [--group G] [--no-cpu] "
                                      "[--slow-ms MS] [--device D] [--csv FILE] [--md FILE] [--torch-csv FILE]");

Args parse(int argc, char** argv) {
  Args a;
  // scripts/device-check.sh runs every benchmark with OUT exported: the reports go there by default, and
  // torch_topk.py's CSV is merged when it has been written there first.
  if (const char* out = std::getenv("OUT"); out && *out) {
    const std::string dir = out;
    a.csv = dir + "/tang.csv";
    a.md = dir + "/tang.md";
    if (std::ifstream(dir + "/tang_torch.csv")) a.torch_csv = dir + "/tang_torch.csv";
  }
  kCommandLine.parse(argc, argv, a, [&](const std::string& s, auto&& value) {
    if (s == "--full") a.full = true;
    else if (s == "--no-cpu") a.cpu = false;
    else if (s == "--m") a.m = std::atoi(value().c_str());
    else if (s == "--group") a.group = std::atoi(value().c_str());
    else if (s == "--slow-ms") a.slow_ms = std::atof(value().c_str());
    else if (s == "--torch-csv") a.torch_csv = value();
    else return false;
    return true;
  });
  return a;
}

using gknn::bench::fill_uniform;

struct Cell {
  int64_t n, k;
  bool cpu;  ///< run the CPU baseline here
};

int log2i(int64_t v) {
  int l = 0;
  while ((int64_t{1} << (l + 1)) <= v) ++l;
  return l;
}

std::string cell_name(const Cell& c) { return "N=2^" + std::to_string(log2i(c.n)) + " k=2^" + std::to_string(log2i(c.k)); }

std::vector<Cell> make_cells(const Args& a) {
  std::vector<Cell> cells;
  if (a.quick) return {{1 << 13, 32, true}, {1 << 13, 1024, true}, {1 << 15, 256, true}};
  if (a.full) {
    for (int ln = 13; ln <= 16; ++ln)
      for (int lk = 5; lk <= 10; ++lk) cells.push_back({int64_t{1} << ln, int64_t{1} << lk, ln == 15 || lk == 8});
    return cells;
  }
  for (int lk = 5; lk <= 10; ++lk) cells.push_back({1 << 15, int64_t{1} << lk, true});  // log k sweep, N = 2^15
  for (int ln : {13, 14, 16}) cells.push_back({int64_t{1} << ln, 256, true});            // log N sweep, k = 2^8
  return cells;
}

enum class Kind { Gpu, CpuHeap, CopyD2H };

struct Method {
  std::string name;
  Kind kind;
  SelectAlgorithm algorithm = SelectAlgorithm::Auto;
  TangOptions tang;
};

std::vector<Method> make_methods(const Args& a) {
  std::vector<Method> methods;
  for (SelectAlgorithm q : {SelectAlgorithm::InsertionQueue, SelectAlgorithm::HeapQueue, SelectAlgorithm::MergeQueue})
    for (int hp = 0; hp < 2; ++hp)
      for (int buffered = 0; buffered < 2; ++buffered)
        for (int aligned = 0; aligned < 2; ++aligned) {
          TangOptions t;
          t.aligned = aligned;
          t.buffered = buffered;
          t.hierarchical = hp;
          t.m = a.m;
          t.group = a.group;
          methods.push_back({select_name(q, t), Kind::Gpu, q, t});
        }
  methods.push_back({"bits", Kind::Gpu, SelectAlgorithm::Bits, {}});
  if (a.cpu) {
    methods.push_back({"cpu_heap (host, all threads)", Kind::CpuHeap, SelectAlgorithm::Heap, {}});
    methods.push_back({"copy_d2h (Q x N keys, pinned)", Kind::CopyD2H, SelectAlgorithm::Auto, {}});
  }
  return methods;
}

struct Measure {
  Cell cell{};
  std::string method;
  double ms = -1.0;  ///< < 0: not run (reason in note)
  int runs = 0;
  size_t hp_bytes = 0;
  std::string check;  ///< "ok", "reference", "MISMATCH ..." or "" (not compared)
  std::string note;
};

/// Host copy of one selection result, to compare methods.
struct HostResult {
  std::vector<float> keys;
  std::vector<int64_t> labels;
};

std::string compare(const HostResult& ref, const HostResult& got, int64_t k) {
  for (size_t i = 0; i < ref.keys.size(); ++i)
    if (!(ref.keys[i] == got.keys[i]) || ref.labels[i] != got.labels[i]) {
      std::ostringstream s;
      s << "MISMATCH row " << i / size_t(k) << " rank " << i % size_t(k) << ": (" << got.labels[i] << " " << got.keys[i]
        << ") vs (" << ref.labels[i] << " " << ref.keys[i] << ")";
      return s.str();
    }
  return "ok";
}

/// Times one GPU entry: warm-up runs, then the median of reps (one run when a warm-up exceeds slow_ms).
double time_gpu(const SelectEntry& entry, const TangOptions& tang, const SelectInput& in, int64_t k,
                const SelectOutput& out, Workspace& ws, const Stream& stream, const Args& args, int* runs) {
  SelectOptions options;
  options.tang = tang;
  const SelectContext ctx{options, ws, stream.get(), args.device};
  return bench::time_ms([&] { entry.run(in, k, out, ctx); }, stream, {args.warmup, args.reps, args.slow_ms}, runs);
}

std::string csv_safe(std::string s) {
  std::replace(s.begin(), s.end(), ',', ';');
  return s;
}

/// torch_topk.py's CSV (rows,cols,k,method,ms,...): ms per (cols, k).
std::map<std::pair<int64_t, int64_t>, double> read_torch(const std::string& path) {
  std::map<std::pair<int64_t, int64_t>, double> t;
  if (path.empty()) return t;
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "gknn_tang_bench: cannot read %s (torch column left empty)\n", path.c_str());
    return t;
  }
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::vector<std::string> parts;
    std::stringstream ss(line);
    for (std::string p; std::getline(ss, p, ',');) parts.push_back(p);
    if (parts.size() >= 5 && std::atof(parts[4].c_str()) > 0)
      t[{std::atoll(parts[1].c_str()), std::atoll(parts[2].c_str())}] = std::atof(parts[4].c_str());
  }
  return t;
}

void write_reports(const std::vector<Measure>& all, const std::vector<Cell>& cells, const std::vector<Method>& methods,
                   int64_t q, const Args& args, const std::string& device) {
  std::ofstream csv(args.csv);
  if (!csv) std::fprintf(stderr, "cannot write %s\n", args.csv.c_str());
  csv << "q,n,k,method,ms,runs,hp_bytes,check,note\n";
  for (const Measure& r : all)
    csv << q << ',' << r.cell.n << ',' << r.cell.k << ',' << r.method << ',' << r.ms << ',' << r.runs << ','
        << r.hp_bytes << ',' << csv_safe(r.check) << ',' << csv_safe(r.note) << '\n';

  std::ofstream md(args.md);
  if (!md) std::fprintf(stderr, "cannot write %s\n", args.md.c_str());
  md << "# Tang et al. k-selection, Table I on " << device << "\n\n";
  md << "Q = " << q << " rows of uniform [0, 1) float keys; m = " << args.m << ", G = " << args.group
     << "; median of " << args.reps << " runs (CUDA events, after " << args.warmup
     << " warm-up), milliseconds. `*`: measured once (slower than " << args.slow_ms
     << " ms). `!`: result differs from the first method's.\n\n";
  md << "| method |";
  for (const Cell& c : cells) md << ' ' << cell_name(c) << " |";
  md << "\n|---|";
  for (size_t i = 0; i < cells.size(); ++i) md << "---:|";
  md << '\n';
  auto find = [&](const Cell& c, const std::string& name) -> const Measure* {
    for (const Measure& r : all)
      if (r.cell.n == c.n && r.cell.k == c.k && r.method == name) return &r;
    return nullptr;
  };
  for (const Method& m : methods) {
    md << "| " << m.name << " |";
    for (const Cell& c : cells) {
      const Measure* r = find(c, m.name);
      char v[64] = "";
      if (r && r->ms > 0)
        std::snprintf(v, sizeof v, "%.3f%s%s", r->ms, r->runs == 1 ? "*" : "",
                      r->check.rfind("MISMATCH", 0) == 0 ? "!" : "");
      else if (r) std::snprintf(v, sizeof v, "-");
      md << ' ' << v << " |";
    }
    md << '\n';
  }
  const auto torch = read_torch(args.torch_csv);
  if (!torch.empty()) {
    md << "| torch.topk (torch_topk.py) |";
    for (const Cell& c : cells) {
      const auto it = torch.find({c.n, c.k});
      char v[32] = "-";
      if (it != torch.end()) std::snprintf(v, sizeof v, "%.3f", it->second);
      md << ' ' << v << " |";
    }
    md << '\n';
  }
  md << "\n## Hierarchical partition memory (G = " << args.group << ", Q = " << q << ", column labels)\n\n";
  md << "| cell | levels | workspace MiB | per query KiB | / input size |\n|---|---:|---:|---:|---:|\n";
  for (const Cell& c : cells) {
    const tang::HierarchyLayout h = tang::hierarchy_layout(q, c.n, c.k, args.group, false);
    char line[200];
    std::snprintf(line, sizeof line, "| %s | %d | %.1f | %.2f | %.3f |\n", cell_name(c).c_str(), h.levels,
                  double(h.bytes) / (1 << 20), double(h.bytes) / double(q) / 1024.0,
                  double(h.bytes) / (double(q) * double(c.n) * sizeof(float)));
    md << line;
  }
  md << "\nNotes: +aligned changes only the merge queue (insertion and heap queues have no merges, so their "
        "+aligned rows run the same kernel). cpu_heap is gknn::select_k (Backend::Cpu, heap) on a host copy, "
        "excluding the copy, which copy_d2h shows.\n";
  std::printf("wrote %s and %s\n", args.csv.c_str(), args.md.c_str());
}

HostResult download(const SelectOutput& out, int64_t q, int64_t k) {
  HostResult h{std::vector<float>(size_t(q * k)), std::vector<int64_t>(size_t(q * k))};
  GKNN_CUDA_TRY(cudaMemcpy(h.keys.data(), out.keys, h.keys.size() * sizeof(float), cudaMemcpyDeviceToHost));
  GKNN_CUDA_TRY(cudaMemcpy(h.labels.data(), out.labels, h.labels.size() * sizeof(int64_t), cudaMemcpyDeviceToHost));
  return h;
}

int run(const Args& args) {
  GKNN_CUDA_TRY(cudaSetDevice(args.device));
  cudaDeviceProp prop{};
  GKNN_CUDA_TRY(cudaGetDeviceProperties(&prop, args.device));
  const int64_t q = args.quick ? 1 << 10 : 1 << 13;
  const std::vector<Cell> cells = make_cells(args);
  const std::vector<Method> methods = make_methods(args);
  std::printf("gknn_tang_bench on %s: Q = %lld, %zu cells, %zu methods, m = %d, G = %d\n", prop.name, (long long)q,
              cells.size(), methods.size(), args.m, args.group);

  std::vector<Measure> all;
  Workspace ws;
  Stream stream;
  int64_t filled_n = -1;
  DeviceBuffer<float> keys;
  PinnedBuffer<float> host_keys;
  for (const Cell& cell : cells) {
    if (cell.n != filled_n) {  // the same keys for every k of one N
      keys.resize(static_cast<size_t>(q * cell.n));
      fill_uniform<<<1024, 256, 0, stream.get()>>>(keys.data(), q * cell.n, 0x7A46ull + uint64_t(cell.n));
      GKNN_CUDA_CHECK_LAUNCH();
      stream.sync();
      filled_n = cell.n;
      if (args.cpu) host_keys = PinnedBuffer<float>(static_cast<size_t>(q * cell.n));
    }
    const SelectInput in{keys.data(), nullptr, cell.n, q, cell.n, 0};
    DeviceBuffer<float> out_keys(static_cast<size_t>(q * cell.k));
    DeviceBuffer<int64_t> out_labels(static_cast<size_t>(q * cell.k));
    const SelectOutput out{out_keys.data(), out_labels.data(), cell.k};
    HostResult reference;
    bool have_reference = false;
    for (const Method& m : methods) {
      Measure r;
      r.cell = cell;
      r.method = m.name;
      try {
        if (m.kind == Kind::Gpu) {
          const SelectEntry* entry = find_select(m.algorithm);
          if (!entry) r.note = "not in this build";
          else if (entry->max_k < cell.k) r.note = "k above max_k";
          else {
            if (m.tang.hierarchical) r.hp_bytes = tang::hierarchy_layout(q, cell.n, cell.k, m.tang.group, false).bytes;
            r.ms = time_gpu(*entry, m.tang, in, cell.k, out, ws, stream, args, &r.runs);
            HostResult got = download(out, q, cell.k);
            if (have_reference) r.check = compare(reference, got, cell.k);
            else reference = std::move(got), have_reference = true, r.check = "reference";
          }
        } else if (!cell.cpu) {
          r.note = "CPU columns only on the paper's sweeps";
        } else if (m.kind == Kind::CopyD2H) {
          Event start, stop;
          start.record(stream.get());
          GKNN_CUDA_TRY(cudaMemcpyAsync(host_keys.data(), keys.data(), size_t(q * cell.n) * sizeof(float),
                                        cudaMemcpyDeviceToHost, stream.get()));
          stop.record(stream.get());
          stream.sync();
          r.ms = stop.since(start);
          r.runs = 1;
        } else {  // CPU heap on a host copy (the copy is not timed here: copy_d2h is its own column)
          GKNN_CUDA_TRY(cudaMemcpy(host_keys.data(), keys.data(), size_t(q * cell.n) * sizeof(float),
                                   cudaMemcpyDeviceToHost));
          HostResult got;
          r.runs = std::max(1, std::min(args.reps, 3));
          r.ms = bench::time_cpu_heap(host_keys.data(), q, cell.n, cell.k, r.runs, &got.keys, &got.labels);
          if (have_reference) r.check = compare(reference, got, cell.k);
        }
      } catch (const gknn::Error& e) {
        r.ms = -1.0;
        r.note = std::string("failed: ") + e.what();
      }
      std::printf("%-14s %-34s %10.3f ms  runs=%d  hp=%zu B  %s %s\n", cell_name(cell).c_str(), m.name.c_str(), r.ms,
                  r.runs, r.hp_bytes, r.check.c_str(), r.note.c_str());
      std::fflush(stdout);
      all.push_back(r);
    }
  }
  write_reports(all, cells, methods, q, args, prop.name);
  for (const Measure& r : all)
    if (r.check.rfind("MISMATCH", 0) == 0) return 1;  // a wrong result must not pass silently
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return kCommandLine.guarded([&] { return run(parse(argc, argv)); });
}
