// gknn/mpi.hpp: exact kNN over the ranks of an MPI communicator (built when CMake finds MPI; link gknn_mpi).
//
// Each rank holds a block of the base rows, searched by a local ShardedIndex (one or several CPU/CUDA shards of
// that process). Queries are broadcast from a root rank; every rank computes the top-k of its rows in key form
// with global indices; the partial lists are gathered to the root and merged there with the same exact k-way
// merge as ShardedIndex, then finalised once. The result is the one a single gknn::Index returns for the
// concatenation of the ranks' rows (rank 0's first), bit for bit under the conditions of sharded_index.hpp.
// The communicator is the caller's (MPI_COMM_WORLD is never assumed); MPI must be initialised by the caller.
// Every function here is collective over that communicator: all its ranks call it, with the same parameters.
// An error on any rank is raised on every rank (gknn::Error naming the failing rank), never a hang.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gknn/io.hpp"
#include "gknn/sharded_index.hpp"

namespace gknn::mpi {

/// True when this process was started by mpirun / mpiexec / srun (Open MPI, MPICH, PMIx or Slurm-PMI
/// environment variables), i.e. when a tool should initialise MPI and split its work by rank.
bool launched_by_mpirun();

/// How this host's cores are shared by the ranks of comm that run on it. The host side of a search (the merge of
/// the ranks' lists, result copies, the CPU backend) runs on OpenMP threads; by default OpenMP takes every core the
/// process may run on, so ranks of one host either oversubscribe its cores or, bound by the launcher (Open MPI
/// binds each of up to two ranks to one core by default), run that work on one core. Collective.
struct HostShare {
  int local_ranks = 1;  ///< ranks of comm on this host (MPI_COMM_TYPE_SHARED)
  int cores = 1;        ///< the host's hardware threads
  int bound_cores = 1;  ///< cores this rank may run on (its CPU affinity)
  int threads = 1;      ///< default threads of this rank's searches: min(bound_cores, cores / local_ranks), >= 1
  /// Empty, or a line saying that the launcher left this rank fewer cores than its share and how to give them.
  std::string notice() const;
};
HostShare host_share(MPI_Comm comm);

/// Runs step() on every rank of comm; when it throws on some ranks, every rank throws the lowest failing rank's
/// error (that rank its own exception, the others gknn::Error with its code and "rank R: message"). For a tool's
/// own steps that may fail on some ranks only (reading a file on the root), so that no rank waits forever.
void collectively(MPI_Comm comm, const std::function<void()>& step);

/// Rows [begin, end) of n that rank `rank` of `ranks` takes under the near-equal split (the first n % ranks
/// ranks get one row more) — the cut of ShardedIndex::add and of read_rank_rows.
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t count() const { return end - begin; }
};
RowRange rank_rows(int64_t n, int rank, int ranks);

/// This rank's rows of a matrix file shared by all ranks (.fvecs, .bvecs and .npy read only these rows;
/// HDF5 is read whole and cut), and where they are in the file.
struct RankRows {
  HostMatrix<float> rows;
  int64_t first = 0;  ///< global index of rows.row(0)
  int64_t total = 0;  ///< rows of the whole file
};
RankRows read_rank_rows(const std::string& path, MPI_Comm comm);

class DistributedIndex {
 public:
  /// local_shards: where this rank's rows live (e.g. {{Backend::Cuda, local_rank % devices}}); Backend::Auto
  /// means CUDA device 0 when one is visible, else the CPU.
  DistributedIndex(MPI_Comm comm, int64_t dimension, Metric metric = Metric::SquaredL2,
                   std::vector<ShardDevice> local_shards = {ShardDevice{Backend::Auto, 0}},
                   ShardMode local_mode = ShardMode::Sharded);
  ~DistributedIndex();
  DistributedIndex(DistributedIndex&&) noexcept;
  DistributedIndex& operator=(DistributedIndex&&) noexcept;

  /// Appends this rank's rows (any count, 0 included). Global indices continue from size() in rank order:
  /// rank 0's new rows first, then rank 1's, ...
  void add(FloatView local_rows);
  /// Queries read on `root` (other ranks pass anything, e.g. an empty view) are broadcast, searched on every
  /// rank and merged on `root`, which gets the result (same contract as Index::search); other ranks get a
  /// Result with 0 rows. params.stats, on root, gets its local phases, and in merge_ms the gather and merge.
  /// params.threads = 0: this rank's share of its host (host_share, computed when the index is made).
  Result search(FloatView queries, const SearchParams& params, int root = 0) const;
  /// Each rank brings its own queries (any count) and gets their result: search() with each rank as root in turn.
  Result search_own_queries(FloatView local_queries, const SearchParams& params) const;

  int64_t size() const noexcept;        ///< rows on all ranks
  int64_t local_size() const noexcept;  ///< rows on this rank
  int64_t dimension() const noexcept;
  Metric metric() const noexcept;
  MPI_Comm comm() const noexcept;
  const ShardedIndex& local() const noexcept;
  void set_p(double p);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Replicated across ranks: every rank's `replica` holds the whole base; the queries read on `root` are
/// broadcast, each rank answers its near-equal part of them (rank_rows), and root gathers the rows in order.
/// Root gets the result; other ranks a Result with 0 rows. params.threads = 0: host_share(comm).threads.
Result replicated_search(const ShardedIndex& replica, FloatView queries, const SearchParams& params, MPI_Comm comm,
                         int root = 0);

}  // namespace gknn::mpi
