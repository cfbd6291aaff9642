// collective.hpp: the MPI calls of gknn::mpi with gknn's error handling: every MPI failure becomes a
// gknn::Error, a failure on one rank becomes an Error on all ranks, and payloads of any size are sent in
// pieces that MPI's int counts can address.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <vector>

#include "gknn/host_array.hpp"

namespace gknn::detail::mpi {

/// Throws gknn::Error(Internal... or Io) naming `what` unless rc == MPI_SUCCESS.
void check(int rc, const char* what);

int rank_of(MPI_Comm comm);
int size_of(MPI_Comm comm);

/// Runs step() on every rank, then agrees: when it threw on some ranks, the lowest failing rank's error is
/// thrown on every rank (its own exception there, gknn::Error with its code and "rank R: message" elsewhere).
void collectively(MPI_Comm comm, const std::function<void()>& step);

/// Broadcasts `bytes` bytes from root, in pieces of at most 1 GiB.
void broadcast(void* data, size_t bytes, int root, MPI_Comm comm);

/// On root: every rank's `local` written in rank order into `out`, which has room for exactly all of them (root's own
/// copied on the host pool): the caller's result, populated in parallel beforehand, so that no page is first touched
/// inside MPI_Recv's copy (a replicated search's 10k x 1000 rows: 120 MB). Nothing is written elsewhere.
template <class T>
void gather_into(std::span<const T> local, int root, MPI_Comm comm, std::span<T> out);

/// On root: every rank's part of a gather, in rank order, each where it lies (root's own is `local` itself, the
/// others in the caller's kept receive buffers, without a copy into one array or a zero fill); counts in elements.
/// Empty elsewhere.
template <class T>
struct GatheredParts {
  std::vector<const T*> parts;
  std::vector<int64_t> counts;
};
/// Receive buffers a caller keeps between gathers, one per sending rank: a repeated gather writes into pages already
/// mapped. A fresh buffer is faulted in page by page inside MPI_Recv's copy (12 MB at 10k x 100 keys and rows,
/// 120 MB at k = 1000), on the root, after the ranks' searches: the ShardedIndex makes its lists populated for the
/// same reason (core/finalize.cpp's key_output).
template <class T>
using ReceiveSpace = std::vector<HostArray<T>>;
/// The other ranks' parts land in `kept` (grown as needed, never shrunk); the parts point into it, valid until the
/// next gather into the same space.
template <class T>
GatheredParts<T> gather_parts(std::span<const T> local, int root, MPI_Comm comm, ReceiveSpace<T>& kept);

/// Sum over ranks and exclusive prefix sum (0 on rank 0) of one int64.
int64_t sum(int64_t value, MPI_Comm comm);
int64_t prefix_sum(int64_t value, MPI_Comm comm);
/// True when every rank passed the same value.
bool same_everywhere(int64_t value, MPI_Comm comm);

}  // namespace gknn::detail::mpi
