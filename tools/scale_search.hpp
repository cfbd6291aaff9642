// scale_search.hpp: `gknn search` on several shards: --devices / --cpu-shards with --shard / --replicate in one
// process (gknn::ShardedIndex), and under mpirun / mpiexec the base split by rank (gknn::mpi).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "gknn/sharded_index.hpp"
#include "search_setup.hpp"

namespace gknn::cli {

struct ScaleOptions {
  std::string devices;  ///< "0,1", "all"; empty: no device list
  int cpu_shards = 0;   ///< > 0: that many CPU shards (testing the sharded path without GPUs)
  bool replicate = false;
  bool shard_flag = false;  ///< --shard: the default, accepted for clarity

  /// Registers --devices, --cpu-shards, --shard, --replicate.
  void add_to(CLI::App& app);
  /// True when the search runs on a ShardedIndex (or, under MPI, on several ranks).
  bool active() const;
  /// True when --devices, --cpu-shards or --replicate asked for several shards in this process.
  bool local() const { return !devices.empty() || cpu_shards > 0 || replicate; }
  ShardMode mode() const;
};

/// The shards of this process: --cpu-shards, --devices, or one shard of `backend`.
std::vector<ShardDevice> local_shards(const ScaleOptions& scale, Backend backend);

/// True when this process was started by mpirun / mpiexec (Open MPI, MPICH, PMIx or Slurm environment) and gknn
/// was built with MPI. The first call initialises MPI; it is finalised at exit.
bool under_mpi();
/// False on MPI ranks other than 0: they search their rows but print and write nothing.
bool output_rank();

/// load_dataset, except under MPI: this rank's block of --base rows (read by row range) and --query on rank 0.
/// --groundtruth is refused under MPI (its exact values need the whole base on one rank).
Dataset load_scaled_dataset(const SearchOptions& options, const ScaleOptions& scale, const std::string& groundtruth);
/// Rows of the whole base (all ranks' rows under MPI).
int64_t base_rows(const Dataset& data);

/// run_search, on the layout the options ask for; prints one line describing it on the output rank.
Result run_scaled_search(const Dataset& data, const SearchOptions& options, const ScaleOptions& scale,
                         const SearchParams& params);

}  // namespace gknn::cli
