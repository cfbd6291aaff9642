// gknn/sharded_index.hpp: one index spread over several shards (CUDA devices or CPU shards) of one process.
//
// Sharded mode splits the base into contiguous row ranges, one per shard; every query goes to every shard and
// the shards' partial top-k lists are merged exactly on (key, global index). Replicated mode stores the whole
// base on every shard and splits the queries into contiguous ranges instead. Each shard searches on its own
// host thread. The result is the one gknn::Index (or gknn::search) returns for the same rows, bit for bit,
// whenever the distance algorithm's keys of a (query, row) pair do not depend on which other rows are searched
// with it: always for the direct kernels and on exactly representable data (e.g. uint8 rows) for every
// algorithm; GEMM keys of float data can differ from a single search by float rounding, as they differ between
// tile shapes (types.hpp). See docs/scale-out.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gknn/join.hpp"
#include "gknn/types.hpp"

namespace gknn {

/// Where one shard lives. Several shards may name the same CUDA device (logical shards: the same code path
/// as several devices, used to test on one GPU).
struct ShardDevice {
  Backend backend = Backend::Cpu;
  int device = 0;  ///< CUDA device ordinal (ignored for the CPU)
};

enum class ShardMode {
  Sharded,     ///< base split by row ranges, queries to every shard, partial lists merged
  Replicated,  ///< base copied to every shard, queries split by row ranges, results concatenated
};

/// "0,1,3" -> CUDA devices 0, 1 and 3 (repeats allowed: logical shards); "all" -> every visible CUDA device.
/// Throws InvalidArgument naming the list for a malformed entry or an invisible device, Unsupported when
/// "all" finds no device.
std::vector<ShardDevice> parse_devices(std::string_view list);
/// "cpu,cuda:0,cuda:1": the shards in the order given.
std::string describe_shards(const std::vector<ShardDevice>& shards);
/// `count` CPU shards.
std::vector<ShardDevice> cpu_shards(int count);

namespace detail {
struct ShardedAccess;  // internal key-form entry point (src/shard/sharded_keys.hpp), used by gknn::mpi
}

class ShardedIndex {
 public:
  ShardedIndex(int64_t dimension, std::vector<ShardDevice> shards, ShardMode mode = ShardMode::Sharded,
               Metric metric = Metric::SquaredL2);
  ~ShardedIndex();
  ShardedIndex(ShardedIndex&&) noexcept;
  ShardedIndex& operator=(ShardedIndex&&) noexcept;

  /// Appends rows (their indices continue from size()). Sharded: the batch is cut into shard_count()
  /// contiguous ranges of near-equal size (the first n % P shards get one row more); replicated: every shard
  /// gets the whole batch.
  void add(FloatView vectors);
  /// Sharded mode only: appends rows with an explicit cut, rows_per_shard[s] consecutive rows to shard s
  /// (sizes >= 0 summing to vectors.rows; zeros make empty shards).
  void add(FloatView vectors, const std::vector<int64_t>& rows_per_shard);
  /// k nearest rows of each query (same contract, order and padding as Index::search). params.device and
  /// params.backend are taken from each shard; params.threads is shared among CPU shards.
  Result search(FloatView queries, int64_t k) const;
  Result search(FloatView queries, const SearchParams& params) const;
  void reset();

  int64_t size() const noexcept;  ///< rows added (not counting replicas)
  int64_t dimension() const noexcept;
  Metric metric() const noexcept;
  ShardMode mode() const noexcept;
  int shard_count() const noexcept;
  int64_t shard_size(int shard) const;  ///< rows stored on one shard
  const std::vector<ShardDevice>& shards() const noexcept;
  /// p of Metric::Lp (default 2).
  void set_p(double p);

  struct Impl;

 private:
  friend struct detail::ShardedAccess;
  std::unique_ptr<Impl> impl_;
};

/// The exact kNN self-join (gknn::knn_join: row i holds the k nearest OTHER points of row i) spread over shards.
/// Sharded: shard s holds the near-equal row range s of the points and joins every point against it (k + 1
/// neighbours, the point itself removed later); the partial lists are merged on the exact float64 distance and
/// the global index. Replicated: every shard holds all points and joins its near-equal range of the query points.
/// Each shard runs knn_join on its own host thread with params.mode (a CPU shard: JoinMode::Cpu, or RoundRobin
/// when asked), on its device, with its share of params.cpu_threads. The result is knn_join's, bit for bit.
/// d > 8: brute force through a ShardedIndex (as knn_join falls back to gknn::search). params.report, when set,
/// gets the wall time, the slowest shard's phases and a note naming the layout.
Result knn_join(FloatView points, int64_t k, const std::vector<ShardDevice>& shards, ShardMode mode = ShardMode::Sharded,
                const JoinParams& params = {});

}  // namespace gknn
