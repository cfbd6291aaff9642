// gknn info: version, build options, CPU, CUDA devices and the algorithms compiled into each backend (listed
// even when the backend has no visible device, so a build can be inspected on a machine without a GPU).
#include <cstdio>
#include <memory>
#include <string>

#include "commands/commands.hpp"
#include "gknn/info.hpp"
#include "gknn/search.hpp"

namespace gknn::cli {
namespace {

const char* yes_no(bool b) { return b ? "yes" : "no"; }

double gib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

void print_build() {
  const BuildInfo b = build_info();
  std::printf("gknn %s (%s build, %s)\n", b.version.c_str(), b.build_type.c_str(), b.compiler.c_str());
  std::printf("build        cuda %s%s%s, openmp %s, blas %s, hdf5 %s\n", yes_no(b.cuda), b.cuda ? " (archs " : "",
              b.cuda ? (b.cuda_archs + ")").c_str() : "", yes_no(b.openmp), yes_no(b.blas), yes_no(b.hdf5));
  std::printf("join         CPU kd-tree %s\n",
              b.join_kdtree ? "nanoflann" : "MISSING (nanoflann.hpp, libnanoflann-dev, not found at configure time): "
                                            "join modes cpu, hybrid and round_robin are unsupported");
  std::printf("cpu          %s\n", cpu_description().c_str());
}

void print_devices() {
  const std::vector<DeviceInfo> devices = cuda_devices();
  if (devices.empty()) std::printf("cuda devices none\n");
  for (const DeviceInfo& d : devices)
    std::printf("cuda device  %d: %s, sm_%d%d, %d SMs, %.1f GiB (%.1f free), L2 %.0f MiB, %zu KiB shared/block\n",
                d.ordinal, d.name.c_str(), d.major, d.minor, d.multiprocessors, gib(d.global_memory),
                gib(d.free_memory), static_cast<double>(d.l2_bytes) / (1024.0 * 1024.0),
                d.shared_per_block_optin / 1024);
}

std::string join_distances(const std::vector<DistanceAlgorithm>& algorithms) {
  std::string out;
  for (DistanceAlgorithm a : algorithms) out += (out.empty() ? "" : ", ") + to_string(a);
  return out.empty() ? "-" : out;
}

/// The measured plan table CUDA Auto consults (docs/planner.md): its source, and its rows for each visible device.
void print_plan_table() {
  const PlanTableSummary all = plan_table_summary("");
  std::printf("plan table   %s: %lld rows\n", all.source.c_str(), static_cast<long long>(all.rows));
  for (const DeviceInfo& d : cuda_devices()) {
    const PlanTableSummary mine = plan_table_summary(d.name);
    std::printf("             %lld for device %d (%s)%s\n", static_cast<long long>(mine.rows_for_device), d.ordinal,
                d.name.c_str(), mine.rows_for_device == 0 ? ": Auto follows its rules there" : "");
  }
}

/// The algorithms compiled into `backend`, listed whether or not it can run here (`state` says which).
void print_algorithms(Backend backend, const char* state) {
  std::printf("\nalgorithms of backend %s (%s)\n", to_string(backend).c_str(), state);
  std::printf("  distance, per metric:\n");
  for (Metric m : {Metric::SquaredL2, Metric::L2, Metric::InnerProduct, Metric::Cosine, Metric::L1, Metric::Linf,
                   Metric::Lp})
    std::printf("    %-14s %s\n", to_string(m).c_str(),
                join_distances(compiled_distance_algorithms(backend, m)).c_str());
  std::printf("  select (largest k):\n");
  for (const SelectCapability& s : compiled_select_algorithms(backend)) {
    const bool unbounded = s.max_k >= (int64_t{1} << 40);
    std::printf("    %-14s %s%s\n", to_string(s.algorithm).c_str(),
                unbounded ? "any k" : ("k <= " + std::to_string(s.max_k)).c_str(),
                catalogue::takes_tang_flags(s.algorithm) ? "  (flags: +aligned +buffered +hp)" : "");
  }
}

std::string backends_of(unsigned mask) {
  std::string out = (mask & catalogue::cpu) ? "cpu" : "";
  if (mask & catalogue::cuda) out += out.empty() ? "cuda" : ",cuda";
  return out;
}

/// Every algorithm of the library (gknn/algorithms.def), whether or not this build or machine runs it.
void print_catalogue() {
  std::printf("\nalgorithm catalogue (kind, name, backends, what it is)\n");
  for (const catalogue::DistanceInfo& d : catalogue::kDistances)
    std::printf("  distance %-16s %-9s %s\n", d.name, backends_of(d.backends).c_str(), d.summary);
  for (const catalogue::SelectInfo& s : catalogue::kSelects)
    std::printf("  select   %-16s %-9s %s\n", s.name, backends_of(s.backends).c_str(), s.summary);
}

int run_info() {
  print_build();
  print_devices();
  const char* cuda = !backend_compiled(Backend::Cuda)        ? "not compiled in"
                     : backend_available(Backend::Cuda) ? "built, device visible"
                                                        : "built, no device visible";
  std::printf("backends     cpu (built), cuda (%s)\n", cuda);
  print_plan_table();
  print_algorithms(Backend::Cpu, "built");
  if (backend_compiled(Backend::Cuda)) print_algorithms(Backend::Cuda, cuda);
  print_catalogue();
  return 0;
}

}  // namespace

Command add_info_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("info", "build options, CPU, CUDA devices and the available algorithms");
  return {app, [] { return run_info(); }};
}

}  // namespace gknn::cli
