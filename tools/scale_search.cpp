// scale_search.cpp: see scale_search.hpp.
#include "scale_search.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "gknn/error.hpp"
#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "gknn/sharded_index.hpp"
#ifdef GKNN_HAS_MPI
#include "gknn/mpi.hpp"
#endif

namespace gknn::cli {
namespace {

int64_t g_total_base_rows = -1;  // the whole base's rows under MPI (each rank loads only its block)


#ifdef GKNN_HAS_MPI
struct MpiSession {
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
    // A launcher's core binding silently slows the host side of every search: say so once (rank 0).
    const std::string notice = mpi::host_share(MPI_COMM_WORLD).notice();
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && !notice.empty()) std::fprintf(stderr, "gknn: note: %s\n", notice.c_str());
  }
};

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// Rank among the ranks of this host: with one device per rank, rank r of a host takes device r % devices.
int host_rank() {
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int rank = 0;
  MPI_Comm_rank(host, &rank);
  MPI_Comm_free(&host);
  return rank;
}

/// Under MPI each rank gets one shard: CUDA device list[host rank % size] (list = --devices, or every visible
/// device when the backend resolves to CUDA), or --cpu-shards CPU shards, or the CPU.
std::vector<ShardDevice> rank_shards(const ScaleOptions& scale, Backend backend) {
  if (scale.cpu_shards > 0) return cpu_shards(scale.cpu_shards);
  const bool cuda = !scale.devices.empty() || backend == Backend::Cuda ||
                    (backend == Backend::Auto && backend_available(Backend::Cuda));
  if (!cuda) return {ShardDevice{Backend::Cpu, 0}};
  const std::vector<ShardDevice> list =
      with_option("--devices", [&] { return parse_devices(scale.devices.empty() ? "all" : scale.devices); });
  return {list[size_t(host_rank()) % list.size()]};
}

Result mpi_search(const Dataset& data, const SearchOptions& options, const ScaleOptions& scale,
                  const SearchParams& params) {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::vector<ShardDevice> shards = rank_shards(scale, params.backend);
  if (output_rank())
    std::printf("mpi          %d ranks, %s; rank 0: %s\n", ranks, scale.replicate ? "replicated" : "sharded",
                describe_shards(shards).c_str());
  return naming_inputs(options, [&] {
    if (scale.replicate) {
      ShardedIndex replica(data.base.cols, shards, ShardMode::Sharded, params.metric);
      replica.set_p(params.p);
      replica.add(data.base.view());
      return mpi::replicated_search(replica, data.queries.view(), params, MPI_COMM_WORLD);
    }
    mpi::DistributedIndex index(MPI_COMM_WORLD, data.base.cols, params.metric, shards);
    index.set_p(params.p);
    index.add(data.base.view());
    return index.search(data.queries.view(), params);
  });
}
#endif

}  // namespace

std::vector<ShardDevice> local_shards(const ScaleOptions& scale, Backend backend) {
  if (scale.cpu_shards > 0) return cpu_shards(scale.cpu_shards);
  if (!scale.devices.empty()) return with_option("--devices", [&] { return parse_devices(scale.devices); });
  return {ShardDevice{backend, 0}};
}

ShardMode ScaleOptions::mode() const { return replicate ? ShardMode::Replicated : ShardMode::Sharded; }

void ScaleOptions::add_to(CLI::App& app) {
  auto* dev = app.add_option("--devices", devices,
                             "search on several CUDA devices: 0,1 or all (a device may repeat: logical shards)");
  auto* cpu = app.add_option("--cpu-shards", cpu_shards, "search on N CPU shards (tests the multi-shard path)")
                  ->check(CLI::Range(1, 1024));
  dev->excludes(cpu);
  auto* shard = app.add_flag("--shard", shard_flag, "with --devices/--cpu-shards or mpirun: split the base (default)");
  auto* rep = app.add_flag("--replicate", replicate,
                           "with --devices/--cpu-shards or mpirun: copy the base to every shard, split the queries");
  shard->excludes(rep);
}

bool ScaleOptions::active() const { return local() || under_mpi(); }

bool under_mpi() {
#ifdef GKNN_HAS_MPI
  static const bool launched = mpi::launched_by_mpirun();
  if (launched) static const MpiSession session;
  return launched;
#else
  return false;
#endif
}

bool output_rank() {
#ifdef GKNN_HAS_MPI
  return !under_mpi() || world_rank() == 0;
#else
  return true;
#endif
}

Dataset load_scaled_dataset(const SearchOptions& options, const ScaleOptions& scale, const std::string& groundtruth) {
  if (!under_mpi()) return load_dataset(options);
#ifdef GKNN_HAS_MPI
  GKNN_EXPECT(groundtruth.empty(), ErrorCode::Unsupported,
              "--groundtruth is not available under mpirun (run `gknn recall` on the written -o file)");
  Stopwatch clock;
  Dataset data;
  mpi::RankRows part;
  if (scale.replicate) {
    mpi::collectively(MPI_COMM_WORLD,
                      [&] { data.base = with_option("--base", [&] { return load_matrix(options.base); }); });
    g_total_base_rows = data.base.rows;
  } else {
    part = with_option("--base", [&] { return mpi::read_rank_rows(options.base, MPI_COMM_WORLD); });
    data.base = std::move(part.rows);
    g_total_base_rows = part.total;
  }
  GKNN_EXPECT(g_total_base_rows > 0, ErrorCode::InvalidArgument, "--base: '", options.base, "' has no vectors");
  mpi::collectively(MPI_COMM_WORLD, [&] {  // rank 0 alone reads the queries; its failure stops every rank
    if (!output_rank()) return;
    data.queries = with_option("--query", [&] { return load_matrix(options.query); });
    GKNN_EXPECT(data.base.cols == data.queries.cols, ErrorCode::InvalidArgument, "dimension mismatch: --base '",
                options.base, "' has dimension ", data.base.cols, " but --query '", options.query,
                "' has dimension ", data.queries.cols);
  });
  data.load_seconds = clock.seconds();
  return data;
#else
  (void)scale, (void)groundtruth;
  return load_dataset(options);
#endif
}

int64_t base_rows(const Dataset& data) { return g_total_base_rows >= 0 ? g_total_base_rows : data.base.rows; }

Result run_scaled_search(const Dataset& data, const SearchOptions& options, const ScaleOptions& scale,
                         const SearchParams& params) {
  if (!scale.active()) return run_search(data, options, params);
#ifdef GKNN_HAS_MPI
  if (under_mpi()) return mpi_search(data, options, scale, params);
#endif
  const std::vector<ShardDevice> shards = local_shards(scale, params.backend);
  std::printf("shards       %zu, %s: %s\n", shards.size(), scale.replicate ? "replicated" : "sharded",
              describe_shards(shards).c_str());
  return naming_inputs(options, [&] {
    ShardedIndex index(data.base.cols, shards, scale.mode(), params.metric);
    index.set_p(params.p);
    index.add(data.base.view());
    return index.search(data.queries.view(), params);
  });
}

}  // namespace gknn::cli
