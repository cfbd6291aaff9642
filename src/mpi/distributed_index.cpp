// distributed_index.cpp: DistributedIndex: a local ShardedIndex per rank, queries broadcast from the root,
// partial key lists gathered to the root and merged by the ShardedIndex's exact k-way merge.
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <cstdlib>
#include <span>

#include "core/finalize.hpp"
#include "core/validate.hpp"
#include "gknn/error.hpp"
#include "gknn/mpi.hpp"
#include "mpi/collective.hpp"
#include "shard/merge.hpp"
#include "shard/segments.hpp"
#include "shard/sharded_keys.hpp"

namespace gknn::mpi {

using namespace detail::mpi;

namespace {

/// The root's receive buffers for the ranks' lists (collective.hpp's ReceiveSpace), kept between searches; the
/// mutex keeps two threads' searches from sharing them (a collective call runs one at a time on a communicator).
struct ListGathers {
  std::mutex busy;
  ReceiveSpace<float> keys;
  ReceiveSpace<double> wide_keys;
  ReceiveSpace<int64_t> rows;
};

/// The ranks' lists merged on the root's device (backend.hpp ProcessListMerge), with what keeps it safe: a rank's
/// lists are freed or grown only after every rank unmapped the others' (a rank may still hold a mapping of them from a
/// search it was the root of).
struct DeviceMerge {
  MPI_Comm comm;
  std::unique_ptr<detail::cuda::ProcessListMerge> lists;
  bool shared = false;  // a root may have mapped other ranks' lists (the same on every rank)
  bool failed = false;  // a root could not map or merge them: the host merges from now on

  /// The index's destruction is collective, as its other calls are.
  ~DeviceMerge() { unmap_everywhere(); }

  void unmap_everywhere() noexcept {
    if (!shared) return;
    lists->close_imports();
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Barrier(comm);
    shared = false;
  }
};

}  // namespace

struct DistributedIndex::Impl {
  MPI_Comm comm;
  int64_t dim;
  Metric metric;
  ShardedIndex local;
  detail::GlobalRows rows;  // this rank's rows -> global indices
  int64_t total = 0;        // rows on all ranks
  int host_threads = 1;     // default threads of a search: this rank's share of its host
  std::unique_ptr<ListGathers> gathers = std::make_unique<ListGathers>();
  /// The ranks' lists merged on the root's device where every rank is on this host with one CUDA shard; null
  /// everywhere otherwise, or after a root could not map another's lists.
  std::unique_ptr<DeviceMerge> device_merge{};
};

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

/// The root's queries on every rank (the root's own view when it is contiguous).
FloatView broadcast_queries(FloatView queries, int root, MPI_Comm comm, std::vector<float>& storage) {
  const bool is_root = rank_of(comm) == root;
  int64_t shape[2] = {queries.rows, queries.cols};
  check(MPI_Bcast(shape, 2, MPI_INT64_T, root, comm), "MPI_Bcast (query shape)");
  if (is_root && (queries.row_stride() == queries.cols || queries.rows == 0) && queries.data) {
    broadcast(const_cast<float*>(queries.data), size_t(shape[0] * shape[1]) * sizeof(float), root, comm);
    return queries;
  }
  storage.resize(size_t(shape[0] * shape[1]));
  if (is_root)
    for (int64_t i = 0; i < queries.rows; ++i)
      std::copy(queries.row(i), queries.row(i) + queries.cols, storage.data() + i * queries.cols);
  broadcast(storage.data(), storage.size() * sizeof(float), root, comm);
  return FloatView{storage.data(), shape[0], shape[1], 0};
}

/// Every rank's lists (rows x its k, keys of type Key, global indices) gathered to root as the parts of a merge;
/// no parts elsewhere or without rows. The parts point into `keys`/`indices` (root's own) and the gathered storage.
template <class Key>
struct GatheredLists {
  GatheredParts<Key> keys;
  GatheredParts<int64_t> indices;
  std::vector<detail::KeyListsOf<Key>> parts;
};

template <class Key>
GatheredLists<Key> gather_lists(std::span<const Key> keys, std::span<const int64_t> indices, int64_t rows, int root,
                                MPI_Comm comm, ReceiveSpace<Key>& key_space, ReceiveSpace<int64_t>& row_space) {
  GatheredLists<Key> out{gather_parts<Key>(keys, root, comm, key_space),
                         gather_parts<int64_t>(indices, root, comm, row_space), {}};
  if (rank_of(comm) == root && rows > 0)
    for (size_t r = 0; r < out.keys.parts.size(); ++r)
      out.parts.push_back({out.keys.parts[r], out.indices.parts[r], rows, out.keys.counts[r] / rows});
  return out;
}

/// On root: the ranks' lists merged (q x k, key form) on their float keys; elsewhere nothing.
detail::KeyResult merge_float_keys(detail::KeyResult keys, int64_t rows, int64_t k, int root, int threads,
                                   MPI_Comm comm, ListGathers& space) {
  const GatheredLists<float> all =
      gather_lists<float>(keys.distances, keys.indices, rows, root, comm, space.keys, space.rows);
  if (all.parts.empty()) return detail::KeyResult{rows, k, {}, {}};
  if (keys.k != k || keys.rows != rows) return detail::merge_key_lists(all.parts, rows, k, threads);
  // Into the root's own lists, one of the parts: each row is merged into a thread's buffer before it is written.
  detail::merge_key_lists_into(all.parts, rows, k, threads, keys.distances.data(), keys.indices.data());
  return keys;  // the views into it are not used after this
}

/// merge_float_keys on float64 keys: the guard's where this rank has them, else its float keys widened (a rank the
/// guard let through computes exact keys, which float64 holds as they are).
detail::KeyResult merge_exact_keys(const detail::KeyResult& keys, HostArray<double> exact, int64_t rows, int64_t k,
                                   int root, int threads, MPI_Comm comm, ListGathers& space) {
  if (exact.empty()) exact.assign(keys.distances.begin(), keys.distances.end());
  const GatheredLists<double> all =
      gather_lists<double>(exact, keys.indices, rows, root, comm, space.wide_keys, space.rows);
  detail::KeyResult merged{rows, k, {}, {}};
  if (all.parts.empty()) return merged;
  HostArray<double> wide_keys = HostArray<double>::for_overwrite(size_t(rows * k));  // the merge writes each
  merged.indices.resize(size_t(rows * k));
  detail::merge_key_lists_into(all.parts, rows, k, threads, wide_keys.data(), merged.indices.data());
  merged.distances = HostArray<float>::for_overwrite(wide_keys.size());
  detail::round_keys_into(wide_keys.data(), merged.distances.data(), int64_t(wide_keys.size()));
  return merged;
}

/// Before a search whose lists outgrow a rank's buffer (ProcessListMerge::must_grow): every rank unmaps the others'
/// buffers, and none grows its own before all have (a barrier), so no mapping outlives the memory it maps.
void make_room_for_lists(DeviceMerge& merge, int64_t rows, int64_t local_k) {
  const bool grow = rows > 0 && local_k > 0 && merge.lists->must_grow(rows, local_k);
  if (sum(grow ? 1 : 0, merge.comm) > 0) merge.unmap_everywhere();
}

/// Every rank's published lists merged on the root's device (ProcessListMerge): the root maps the others' buffers
/// and merges; the others wait until it has read them. Root gets the merged keys, the others an empty KeyResult;
/// nothing on any rank where the root could not map or merge (every rank then merges on the host, and this index
/// does from now on).
std::optional<detail::KeyResult> merge_on_root_device(DeviceMerge& merge, const detail::cuda::ExportedLists& mine,
                                                      int64_t k, int root) {
  const int rank = rank_of(merge.comm), ranks = size_of(merge.comm);
  std::vector<detail::cuda::ExportedLists> all(rank == root ? size_t(ranks) : 0);
  check(MPI_Gather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine), MPI_BYTE, root, merge.comm),
        "MPI_Gather (the ranks' device lists)");
  merge.shared = true;
  std::optional<detail::KeyResult> merged;
  collectively(merge.comm, [&] {
    if (rank != root) return;
    all.erase(all.begin() + root);
    merged = merge.lists->merge(all, k);
  });
  int served = merged || rank != root ? 1 : 0;
  check(MPI_Bcast(&served, 1, MPI_INT, root, merge.comm), "MPI_Bcast (device merge served)");
  if (!served) {
    merge.unmap_everywhere();
    merge.failed = true;  // the lists go after this search's download (search)
    return std::nullopt;
  }
  if (rank != root) return detail::KeyResult{};
  return merged;
}

}  // namespace

DistributedIndex::DistributedIndex(MPI_Comm comm, int64_t dimension, Metric metric,
                                   std::vector<ShardDevice> local_shards, ShardMode local_mode) {
  const HostShare share = host_share(comm);
  collectively(comm, [&] {
    impl_ = std::unique_ptr<Impl>(new Impl{comm, dimension, metric,
                                           ShardedIndex(dimension, std::move(local_shards), local_mode, metric), {}, 0,
                                           share.threads});
  });
  // The device merge needs every rank on this host (CUDA IPC) with its rows on one CUDA device.
  const std::vector<ShardDevice>& mine = impl_->local.shards();
  std::unique_ptr<detail::cuda::ProcessListMerge> lists;
  if (share.local_ranks == size_of(comm) && local_mode == ShardMode::Sharded && mine.size() == 1 &&
      mine[0].backend == Backend::Cuda) {
    try {
      lists = detail::cuda::process_list_merge();
    } catch (const std::exception&) {  // no device merge on this rank: the host merges on every rank
    }
  }
  if (sum(lists ? 1 : 0, comm) == size_of(comm))
    impl_->device_merge = std::unique_ptr<DeviceMerge>(new DeviceMerge{comm, std::move(lists)});
}

DistributedIndex::~DistributedIndex() = default;
DistributedIndex::DistributedIndex(DistributedIndex&&) noexcept = default;
DistributedIndex& DistributedIndex::operator=(DistributedIndex&&) noexcept = default;

void DistributedIndex::add(FloatView local_rows) {
  Impl& impl = *impl_;
  collectively(impl.comm, [&] {  // every rank's rows are valid before any rank stores its own
    if (local_rows.rows == 0) return;  // an empty rank may pass any view, e.g. FloatView{}
    detail::validate_matrix(local_rows, "DistributedIndex::add rows", true);
    GKNN_EXPECT(local_rows.cols == impl.dim, ErrorCode::InvalidArgument,
                "DistributedIndex::add: rows have dimension ", local_rows.cols, ", the index has ", impl.dim);
  });
  const int64_t before = prefix_sum(local_rows.rows, impl.comm), added = sum(local_rows.rows, impl.comm);
  collectively(impl.comm, [&] {
    if (local_rows.rows > 0) impl.local.add(local_rows);
  });
  impl.rows.append(impl.total + before, local_rows.rows);
  impl.total += added;
}

Result DistributedIndex::search(FloatView queries, const SearchParams& params, int root) const {
  const auto start = std::chrono::steady_clock::now();
  const Impl& impl = *impl_;
  const int rank = rank_of(impl.comm), ranks = size_of(impl.comm);
  const bool same = same_everywhere(params.k, impl.comm) && same_everywhere(root, impl.comm) &&
                    same_everywhere(int64_t(params.metric), impl.comm);
  SearchParams checked;
  collectively(impl.comm, [&] {
    GKNN_EXPECT(same, ErrorCode::InvalidArgument,
                "DistributedIndex::search: the ranks passed different k, metric or root (the call is collective)");
    GKNN_EXPECT(root >= 0 && root < ranks, ErrorCode::InvalidArgument, "DistributedIndex::search: root ", root,
                " is not a rank of the communicator (", ranks, " ranks)");
    checked = detail::ShardedAccess::checked_params(impl.local, params);
    if (checked.threads == 0) checked.threads = impl.host_threads;
    GKNN_EXPECT(impl.total > 0, ErrorCode::InvalidArgument, "DistributedIndex::search: the index is empty");
  });
  std::vector<float> storage;
  const FloatView q = broadcast_queries(queries, root, impl.comm, storage);

  SearchStats local_stats;
  SearchParams local_params = checked;
  local_params.stats = &local_stats;
  if (rank != root) local_params.progress = {};
  const int64_t k = std::min(checked.k, impl.total);
  DeviceMerge* device = impl.device_merge && impl.device_merge->lists ? impl.device_merge.get() : nullptr;
  if (device) make_room_for_lists(*device, q.rows, std::min(checked.k, impl.local.size()));
  detail::KeyResult keys;
  HostArray<double> exact;  // the guard's float64 keys, when it re-ranked this rank's lists
  detail::DeviceListsTarget target{device ? device->lists.get() : nullptr, false, {}};
  detail::cuda::ExportedLists published;
  collectively(impl.comm, [&] {
    keys = detail::ShardedAccess::search_keys(impl.local, q, local_params, &exact, device ? &target : nullptr);
    if (target.written) {
      std::vector<int64_t> local_begin, global_begin;
      target.rows.then(impl.rows).segments(local_begin, global_begin);
      published = device->lists->publish(local_begin, global_begin);
    } else {
      impl.rows.to_global(keys.indices);
    }
  });

  const auto merge_start = std::chrono::steady_clock::now();
  const std::lock_guard<std::mutex> lock(impl.gathers->busy);
  std::optional<detail::KeyResult> on_device;
  if (device) {
    if (sum(target.written ? 1 : 0, impl.comm) == ranks) on_device = merge_on_root_device(*device, published, k, root);
    if (!on_device && target.written) keys = device->lists->download();  // its rows are global already
    if (device->failed) device->lists.reset();  // every rank unmapped the others' lists (merge_on_root_device)
  }
  detail::KeyResult merged;
  if (on_device) {
    merged = std::move(*on_device);
  } else {
    // Guarded lists merge on their float64 keys: two rows of different ranks whose float64 keys differ can round to
    // one float key, and the index would then decide where one device ranks them by the float64 key.
    const bool wide = sum(exact.empty() ? 0 : 1, impl.comm) > 0;
    merged = wide ? merge_exact_keys(keys, std::move(exact), q.rows, k, root, checked.threads, impl.comm,
                                     *impl.gathers)
                  : merge_float_keys(std::move(keys), q.rows, k, root, checked.threads, impl.comm, *impl.gathers);
  }
  if (rank != root) return Result{0, checked.k, {}, {}};
  Result out = detail::finalize(std::move(merged), checked.metric, checked.p, checked.k);
  if (params.stats) {
    *params.stats = local_stats;
    params.stats->merge_ms += elapsed_ms(merge_start);
    params.stats->total_ms = elapsed_ms(start);
  }
  return out;
}

Result DistributedIndex::search_own_queries(FloatView local_queries, const SearchParams& params) const {
  Result mine;
  const int rank = rank_of(impl_->comm);
  for (int root = 0; root < size_of(impl_->comm); ++root) {
    Result r = search(local_queries, params, root);
    if (root == rank) mine = std::move(r);
  }
  return mine;
}

int64_t DistributedIndex::size() const noexcept { return impl_->total; }
int64_t DistributedIndex::local_size() const noexcept { return impl_->local.size(); }
int64_t DistributedIndex::dimension() const noexcept { return impl_->dim; }
Metric DistributedIndex::metric() const noexcept { return impl_->metric; }
MPI_Comm DistributedIndex::comm() const noexcept { return impl_->comm; }
const ShardedIndex& DistributedIndex::local() const noexcept { return impl_->local; }

void DistributedIndex::set_p(double p) { impl_->local.set_p(p); }

Result replicated_search(const ShardedIndex& replica, FloatView queries, const SearchParams& params, MPI_Comm comm,
                         int root) {
  const int rank = rank_of(comm), ranks = size_of(comm);
  const bool same = same_everywhere(params.k, comm) && same_everywhere(root, comm) &&
                    same_everywhere(replica.size(), comm);
  collectively(comm, [&] {
    GKNN_EXPECT(same, ErrorCode::InvalidArgument,
                "replicated_search: the ranks passed different k, root or replica sizes (the call is collective)");
    GKNN_EXPECT(root >= 0 && root < ranks, ErrorCode::InvalidArgument, "replicated_search: root ", root,
                " is not a rank of the communicator (", ranks, " ranks)");
  });
  SearchParams local_params = params;
  if (local_params.threads == 0) local_params.threads = host_share(comm).threads;
  std::vector<float> storage;
  const FloatView q = broadcast_queries(queries, root, comm, storage);
  const RowRange mine = rank_rows(q.rows, rank, ranks);
  Result part;
  collectively(comm, [&] {
    part = replica.search(FloatView{q.row(mine.begin), mine.count(), q.cols, q.row_stride()}, local_params);
  });
  // Every rank's part.k is min(k, the replica's rows), the same everywhere (checked above).
  Result out = rank == root ? detail::allocate_result_populated(q.rows, part.k) : Result{0, part.k, {}, {}};
  gather_into<float>(part.distances, root, comm, out.distances);
  gather_into<int64_t>(part.indices, root, comm, out.indices);
  return out;
}

void collectively(MPI_Comm comm, const std::function<void()>& step) { detail::mpi::collectively(comm, step); }

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name)) return true;
  return false;
}

RowRange rank_rows(int64_t n, int rank, int ranks) {
  GKNN_EXPECT(ranks > 0 && rank >= 0 && rank < ranks && n >= 0, ErrorCode::InvalidArgument, "rank_rows: rank ",
              rank, " of ", ranks, " ranks, ", n, " rows");
  const detail::PartRange range = detail::near_equal_part(n, rank, ranks);
  return {range.begin, range.end};
}

RankRows read_rank_rows(const std::string& path, MPI_Comm comm) {
  RankRows out;
  collectively(comm, [&] {
    out.total = matrix_shape(path).rows;
    const RowRange range = rank_rows(out.total, rank_of(comm), size_of(comm));
    out.first = range.begin;
    out.rows = load_matrix_rows(path, range.begin, range.count());
  });
  return out;
}

}  // namespace gknn::mpi
