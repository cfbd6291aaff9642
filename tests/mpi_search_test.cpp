// mpi_search_test.cpp: gknn::mpi::DistributedIndex on 1..4 ranks (CTest runs it under mpiexec -n 1, 2, 3, 4)
// against one Index bit for bit: every metric, k = 1 / 10 / k > n, balanced, uneven, empty and tiny (< k rows)
// rank shares, several add batches, each rank its own queries, several shards per rank, rows read from shared
// files by row range, errors raised on every rank. --cuda: the ranks' rows on CUDA device 0 (ranks share it).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "gknn/error.hpp"
#include "gknn/info.hpp"
#include "gknn/io.hpp"
#include "gknn/mpi.hpp"
#include "gknn/search.hpp"
#include "shard_common.hpp"
#ifdef GKNN_HAS_CUDA
#include "cuda/hooks.hpp"
#endif
#include "testing/data.hpp"
#include "testing/expect_error.hpp"

namespace gknn::testing {
namespace {

bool g_cuda = false;

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int ranks() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// A communicator of its own (the layer must not assume MPI_COMM_WORLD): the world's ranks in reverse order.
class ReversedComm {
 public:
  ReversedComm() { MPI_Comm_split(MPI_COMM_WORLD, 0, ranks() - rank(), &comm_); }
  ~ReversedComm() { MPI_Comm_free(&comm_); }
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_;
};

int rank_in(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

std::vector<ShardDevice> local_shards(int count = 1) {
  return std::vector<ShardDevice>(size_t(count), ShardDevice{g_cuda ? Backend::Cuda : Backend::Cpu, 0});
}

SearchParams params_for(Metric metric, int64_t k) {
  SearchParams p;
  p.k = k;
  p.metric = metric;
  p.p = metric == Metric::Lp ? 3.0 : 2.0;
  p.backend = g_cuda ? Backend::Cuda : Backend::Cpu;
  p.distance = g_cuda ? DistanceAlgorithm::GarciaGlobal : DistanceAlgorithm::Direct;  // pairwise keys
  return p;
}

/// Rows [first, first + count) of m.
FloatView rows_of(const HostMatrix<float>& m, int64_t first, int64_t count) {
  return {m.data.data() + first * m.cols, count, m.cols, 0};
}

/// This rank's rows under `cut` (one entry per rank of comm).
FloatView my_rows(const HostMatrix<float>& base, const std::vector<int64_t>& cut, int my_rank) {
  int64_t first = 0;
  for (int r = 0; r < my_rank; ++r) first += cut[size_t(r)];
  return rows_of(base, first, cut[size_t(my_rank)]);
}

TEST(MpiSearch, EveryMetricEveryCutEqualsOneIndex) {
  ReversedComm comm;
  const int me = rank_in(comm.get());
  const HostMatrix<float> base = integer_matrix(97, 7, -3, 3, 71), queries = integer_matrix(13, 7, -3, 3, 72);
  for (Metric metric : every_metric())
    for (int64_t k : {int64_t(1), int64_t(10), int64_t(120)}) {
      const SearchParams params = params_for(metric, k);
      const Result want = single_search(base.view(), queries.view(), params);
      for (const std::vector<int64_t>& cut : shard_cuts(base.rows, ranks())) {
        SCOPED_TRACE(to_string(metric) + " k=" + std::to_string(k) + " cut " + cut_name(cut));
        mpi::DistributedIndex index(comm.get(), base.cols, metric, local_shards());
        index.set_p(params.p);
        index.add(my_rows(base, cut, me));
        EXPECT_EQ(index.size(), base.rows);
        EXPECT_EQ(index.local_size(), cut[size_t(me)]);
        const int root = int(k % ranks());  // not always rank 0
        const Result got = index.search(me == root ? queries.view() : FloatView{}, params, root);
        if (me == root) expect_identical(got, want);
        else EXPECT_EQ(got.rows, 0);
      }
    }
}

TEST(MpiSearch, GuardedRanksMergeOnFloat64Keys) {
  // Float data: each rank's guard ranks its rows on float64 keys. Row 0 (first rank) lies at squared distance
  // 1 + 2^-26 from the origin, the last row (last rank) at exactly 1: one float key (1.0f), but only the last row is
  // the nearest for one Index (and the float64 oracle). Merged on float keys, the index would take row 0 at k = 1.
  ReversedComm comm;
  const int me = rank_in(comm.get()), n_ranks = ranks();
  HostMatrix<float> base = random_matrix(60, 2, 93);
  for (int64_t i = 0; i < base.rows; ++i) base.data[size_t(i * 2)] += 3.f;  // every other row beyond distance 2
  base.data[0] = 1.f, base.data[1] = std::ldexp(1.f, -13);
  base.data[size_t(base.rows * 2 - 2)] = 1.f, base.data[size_t(base.rows * 2 - 1)] = 0.f;
  HostMatrix<float> queries = random_matrix(4, 2, 94);
  queries.data[0] = queries.data[1] = 0.f;
  const mpi::RowRange mine = mpi::rank_rows(base.rows, me, n_ranks);
  for (Metric metric : {Metric::SquaredL2, Metric::L2})
    for (int64_t k : {int64_t(1), int64_t(2), int64_t(7)}) {
      SCOPED_TRACE(to_string(metric) + " k=" + std::to_string(k));
      const SearchParams params = params_for(metric, k);
      const Result want = single_search(base.view(), queries.view(), params);
      // The float64 order takes the last row at k = 1 (equal reported values are then listed by index).
      EXPECT_NE(std::find(want.indices.begin(), want.indices.begin() + k, base.rows - 1), want.indices.begin() + k);
      mpi::DistributedIndex index(comm.get(), base.cols, metric, local_shards());
      index.add(rows_of(base, mine.begin, mine.count()));
      const Result got = index.search(me == 0 ? queries.view() : FloatView{}, params, 0);
      if (me == 0) expect_identical(got, want);
    }
}

TEST(MpiSearch, RepeatedSearchesReuseTheRootsReceiveBuffers) {
  // The root keeps its receive buffers between searches (collective.hpp's ReceiveSpace): searches of one index whose
  // lists shrink and grow again (q x k), roots that change, float keys then the guard's float64 keys, each must
  // equal one Index's answer.
  ReversedComm comm;
  const int me = rank_in(comm.get()), n_ranks = ranks();
  const HostMatrix<float> ints = integer_matrix(97, 7, -3, 3, 81), int_queries = integer_matrix(13, 7, -3, 3, 82);
  const HostMatrix<float> floats = random_matrix(97, 7, 83);
  const mpi::RowRange mine = mpi::rank_rows(ints.rows, me, n_ranks);
  for (const HostMatrix<float>* base : {&ints, &floats}) {
    mpi::DistributedIndex index(comm.get(), base->cols, Metric::SquaredL2, local_shards());
    index.add(rows_of(*base, mine.begin, mine.count()));
    int call = 0;
    for (const auto& [q, k] : std::vector<std::pair<int64_t, int64_t>>{{13, 120}, {3, 5}, {13, 40}, {1, 97}, {13, 120}}) {
      SCOPED_TRACE(std::string(base == &ints ? "integer" : "float") + " q=" + std::to_string(q) +
                   " k=" + std::to_string(k));
      const SearchParams params = params_for(Metric::SquaredL2, k);
      const FloatView queries = rows_of(int_queries, 0, q);
      const int root = call++ % n_ranks;
      const Result got = index.search(me == root ? queries : FloatView{}, params, root);
      if (me == root) expect_identical(got, single_search(base->view(), queries, params));
    }
  }
}

TEST(MpiSearch, SeveralBatchesSeveralShardsOwnQueries) {
  ReversedComm comm;
  const int me = rank_in(comm.get()), n_ranks = ranks();
  const HostMatrix<float> base = integer_matrix(150, 5, -4, 4, 81), queries = integer_matrix(20, 5, -4, 4, 82);
  // Batch 1: rows [0, 60) near-equally; batch 2: rows [60, 150) all on the last rank. Global indices follow
  // rank order within each batch, so the base the ranks hold is the file's rows in this order.
  const mpi::RowRange first = mpi::rank_rows(60, me, n_ranks);
  const SearchParams params = params_for(Metric::L2, 30);
  mpi::DistributedIndex index(comm.get(), base.cols, Metric::L2, local_shards(2));
  index.add(rows_of(base, first.begin, first.count()));
  index.add(me == n_ranks - 1 ? rows_of(base, 60, 90) : rows_of(base, 60, 0));
  EXPECT_EQ(index.size(), 150);
  // each rank its own queries: rows [rank_rows(20)) of the query file
  const mpi::RowRange mine = mpi::rank_rows(queries.rows, me, n_ranks);
  const FloatView own = rows_of(queries, mine.begin, mine.count());
  expect_identical(index.search_own_queries(own, params), single_search(base.view(), own, params));
}

TEST(MpiSearch, RowsReadFromSharedFiles) {
  const HostMatrix<float> base = integer_matrix(41, 6, 0, 9, 91), queries = integer_matrix(5, 6, 0, 9, 92);
  // Rank 0's process id in the name: runs of this test side by side (every rank count, CPU and CUDA, each
  // sanitizer tool at once) never share, or delete, each other's files.
  long owner = static_cast<long>(getpid());
  MPI_Bcast(&owner, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const std::string stem = std::string(g_cuda ? "mpi_rows_cuda_" : "mpi_rows_") + std::to_string(ranks()) + "_" +
                           std::to_string(owner);
  HostMatrix<uint8_t> bytes(base.rows, base.cols);
  for (size_t i = 0; i < base.data.size(); ++i) bytes.data[i] = uint8_t(base.data[i]);
  if (rank() == 0) {
    write_fvecs(stem + ".fvecs", base.view());
    write_bvecs(stem + ".bvecs", std::as_const(bytes).view());
    write_npy(stem + ".npy", base.view());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const SearchParams params = params_for(Metric::SquaredL2, 8);
  const Result want = single_search(base.view(), queries.view(), params);
  for (const char* ext : {".fvecs", ".bvecs", ".npy"}) {
    SCOPED_TRACE(ext);
    const mpi::RankRows part = mpi::read_rank_rows(stem + ext, MPI_COMM_WORLD);
    EXPECT_EQ(part.total, base.rows);
    const mpi::RowRange range = mpi::rank_rows(base.rows, rank(), ranks());
    EXPECT_EQ(part.first, range.begin);
    ASSERT_EQ(part.rows.rows, range.count());
    EXPECT_TRUE(std::equal(part.rows.data.begin(), part.rows.data.end(), base.data.begin() + range.begin * 6));
    mpi::DistributedIndex index(MPI_COMM_WORLD, base.cols, Metric::SquaredL2, local_shards());
    index.add(part.rows.view());
    const Result got = index.search(queries.view(), params);
    if (rank() == 0) expect_identical(got, want);
  }
  expect_error([&] { mpi::read_rank_rows(stem + ".missing.fvecs", MPI_COMM_WORLD); }, ErrorCode::Io,
               {"missing.fvecs"});
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() == 0)
    for (const char* ext : {".fvecs", ".bvecs", ".npy"}) std::remove((stem + ext).c_str());
}

TEST(MpiSearch, ErrorsReachEveryRank) {
  const HostMatrix<float> base = integer_matrix(10, 3, 0, 5, 95);
  mpi::DistributedIndex index(MPI_COMM_WORLD, 3, Metric::SquaredL2, local_shards());
  expect_error([&] { index.search(base.view(), params_for(Metric::SquaredL2, 2)); }, ErrorCode::InvalidArgument,
               {"empty"});
  index.add(rank() == 0 ? base.view() : FloatView{nullptr, 0, 3, 0});
  HostMatrix<float> bad = base;
  bad.row(4)[1] = NAN;
  expect_error([&] { index.search(bad.view(), params_for(Metric::SquaredL2, 2)); }, ErrorCode::InvalidArgument,
               {"row 4"});
  if (ranks() > 1)
    expect_error([&] { index.search(base.view(), params_for(Metric::SquaredL2, rank() == 0 ? 3 : 2)); },
                 ErrorCode::InvalidArgument, {"different k"});
  expect_error([&] { index.search(base.view(), params_for(Metric::SquaredL2, 2), ranks()); },
               ErrorCode::InvalidArgument, {"root"});
  // a failure on one rank only: rank (last)'s rows have the wrong dimension
  const HostMatrix<float> wide = integer_matrix(2, 4, 0, 5, 96);
  expect_error([&] { index.add(rank() == ranks() - 1 ? wide.view() : FloatView{nullptr, 0, 3, 0}); },
               ErrorCode::InvalidArgument, {"dimension 4"});
  EXPECT_EQ(index.size(), 10);  // nothing was added anywhere
}

/// The whole base on every rank, each answering its near-equal part of the root's queries: the root gets one Index's
/// result, rows in query order, for every metric and k (k > n included), with more ranks than queries (ranks with none)
/// and a root that is not rank 0.
TEST(MpiSearch, ReplicatedSearchEqualsOneIndex) {
  ReversedComm comm;
  const int me = rank_in(comm.get()), n_ranks = ranks();
  const HostMatrix<float> base = integer_matrix(61, 5, -3, 3, 85), queries = integer_matrix(11, 5, -3, 3, 86);
  for (Metric metric : every_metric()) {
    ShardedIndex replica(base.cols, local_shards(), ShardMode::Sharded, metric);
    replica.set_p(3.0);
    replica.add(base.view());
    for (int64_t q : {int64_t(11), int64_t(2)})
      for (int64_t k : {int64_t(1), int64_t(9), int64_t(70)}) {
        SCOPED_TRACE(to_string(metric) + " q=" + std::to_string(q) + " k=" + std::to_string(k));
        const SearchParams params = params_for(metric, k);
        const FloatView mine = rows_of(queries, 0, q);
        const int root = n_ranks - 1;
        const Result got = mpi::replicated_search(replica, me == root ? mine : FloatView{}, params, comm.get(), root);
        if (me == root) expect_identical(got, single_search(base.view(), mine, params));
        else EXPECT_EQ(got.rows, 0);
      }
  }
}

#ifdef GKNN_HAS_CUDA
/// Integer data (no guard) on one CUDA shard per rank, each rank on device rank % visible devices, two add batches:
/// the ranks' lists merge on the root's device (ProcessListMerge, CUDA IPC between the ranks), equal to one Index's
/// and to the host merge's, for every root and lists that grow (k beyond a rank's rows included).
TEST(MpiSearch, RanksListsMergeOnTheRootsDevice) {
  if (!g_cuda) GTEST_SKIP() << "the device merge needs --cuda";
  struct MergeOn {
    ~MergeOn() { detail::cuda::set_device_list_merge_enabled(true); }
  } restore;
  ReversedComm comm;
  const int me = rank_in(comm.get()), n_ranks = ranks();
  const int device = me % std::max<int>(1, int(cuda_devices().size()));
  const HostMatrix<float> base = integer_matrix(211, 9, -5, 5, 97), queries = integer_matrix(17, 9, -5, 5, 98);
  // Batch 1: rows [0, 120) near-equally, batch 2: rows [120, 211) near-equally (global rows in rank order within
  // each batch): every rank holds two segments.
  const mpi::RowRange first = mpi::rank_rows(120, me, n_ranks), second = mpi::rank_rows(91, me, n_ranks);
  int call = 0;
  for (Metric metric : {Metric::L2, Metric::InnerProduct})
    for (bool device_merge : {true, false}) {
      detail::cuda::set_device_list_merge_enabled(device_merge);
      mpi::DistributedIndex index(comm.get(), base.cols, metric, {ShardDevice{Backend::Cuda, device}});
      index.add(rows_of(base, first.begin, first.count()));
      index.add(rows_of(base, 120 + second.begin, second.count()));
      for (int64_t k : {int64_t(3), int64_t(40), int64_t(150)}) {
        SCOPED_TRACE(to_string(metric) + (device_merge ? " device" : " host") + " merge, k=" + std::to_string(k));
        const SearchParams params = params_for(metric, k);
        const int root = call++ % n_ranks;
        const int64_t before = detail::cuda::process_list_merges();
        const Result got = index.search(me == root ? queries.view() : FloatView{}, params, root);
        if (me != root) continue;
        expect_identical(got, single_search(base.view(), queries.view(), params));
        EXPECT_EQ(detail::cuda::process_list_merges() - before, device_merge ? 1 : 0);
      }
    }
}
#endif

TEST(MpiSearch, HostShareSplitsTheHostAmongItsRanks) {
  const mpi::HostShare share = mpi::host_share(MPI_COMM_WORLD);
  EXPECT_EQ(share.local_ranks, ranks());  // CTest starts every rank on this host
  EXPECT_GE(share.bound_cores, 1);
  EXPECT_LE(share.bound_cores, share.cores);
  EXPECT_EQ(share.threads, std::max(1, std::min(share.bound_cores, share.cores / share.local_ranks)));
  EXPECT_EQ(share.notice().empty(), share.bound_cores >= std::max(1, share.cores / share.local_ranks));
  // A rank bound to one core of a host with cores to spare is told so, with the launcher option that helps.
  const mpi::HostShare bound{2, 64, 1, 1};
  EXPECT_NE(bound.notice().find("--bind-to none"), std::string::npos) << bound.notice();
  EXPECT_NE(bound.notice().find("PE=32"), std::string::npos) << bound.notice();
  EXPECT_TRUE((mpi::HostShare{2, 64, 64, 32}.notice().empty()));
}

}  // namespace
}  // namespace gknn::testing

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int out = 1;
  bool require_gpu = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cuda") == 0) gknn::testing::g_cuda = require_gpu = true;
    else argv[out++] = argv[i];
  }
  argc = out;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (require_gpu && !gknn::backend_available(gknn::Backend::Cuda)) {  // the same answer on every rank
    if (rank == 0) std::printf("MPI GPU tests SKIPPED: no CUDA device is visible (or no CUDA backend)\n");
    MPI_Finalize();
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) ::testing::GTEST_FLAG(brief) = true;  // full report from rank 0, only failures from the others
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#ifdef GKNN_HAS_CUDA
  gknn::detail::cuda::release_cached_device_resources();  // as testing/main.cpp: for the leak check
#endif
  MPI_Finalize();
  return failed;
}
