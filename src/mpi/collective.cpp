// collective.cpp: see collective.hpp.
#include "mpi/collective.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "core/host_parallel.hpp"
#include "gknn/error.hpp"

namespace gknn::detail::mpi {
namespace {

constexpr size_t kPieceBytes = size_t(1) << 30;

/// Code and message of whatever a step threw.
std::pair<ErrorCode, std::string> describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::bad_alloc&) {
    return {ErrorCode::OutOfMemory, "out of host memory"};
  } catch (const std::exception& e) {
    return {ErrorCode::Internal, e.what()};
  } catch (...) {
    return {ErrorCode::Internal, "unknown exception"};
  }
}

}  // namespace

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  detail::fail(ErrorCode::Internal, "MPI: ", what, " failed: ", std::string(text, size_t(length)));
}

int rank_of(MPI_Comm comm) {
  int rank = 0;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 0;
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

void collectively(MPI_Comm comm, const std::function<void()>& step) {
  std::exception_ptr error;
  try {
    step();
  } catch (...) {
    error = std::current_exception();
  }
  const int rank = rank_of(comm);
  int failing = error ? rank : INT_MAX;
  check(MPI_Allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (error agreement)");
  if (failing == INT_MAX) return;
  auto [code, message] = rank == failing ? describe(error) : std::pair<ErrorCode, std::string>{};
  int64_t header[2] = {int64_t(code), int64_t(message.size())};
  check(MPI_Bcast(header, 2, MPI_INT64_T, failing, comm), "MPI_Bcast (error)");
  message.resize(size_t(header[1]));
  broadcast(message.data(), message.size(), failing, comm);
  if (rank == failing) std::rethrow_exception(error);
  throw Error(static_cast<ErrorCode>(header[0]), "rank " + std::to_string(failing) + ": " + message);
}

void broadcast(void* data, size_t bytes, int root, MPI_Comm comm) {
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes; done += kPieceBytes)
    check(MPI_Bcast(p + done, int(std::min(kPieceBytes, bytes - done)), MPI_BYTE, root, comm), "MPI_Bcast");
}

namespace {

constexpr int kGatherTag = 7;

/// Point to point in pieces: Gatherv's int counts and displacements would cap a gather at 2^31 elements.
void send_pieces(const void* data, size_t bytes, int root, MPI_Comm comm) {
  const auto* p = static_cast<const char*>(data);
  for (size_t done = 0; done < bytes; done += kPieceBytes)
    check(MPI_Send(p + done, int(std::min(kPieceBytes, bytes - done)), MPI_BYTE, root, kGatherTag, comm), "MPI_Send");
}

void receive_pieces(void* data, size_t bytes, int from, MPI_Comm comm) {
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes; done += kPieceBytes)
    check(MPI_Recv(p + done, int(std::min(kPieceBytes, bytes - done)), MPI_BYTE, from, kGatherTag, comm,
                   MPI_STATUS_IGNORE),
          "MPI_Recv");
}

/// Every rank's element count, on root (empty elsewhere).
std::vector<int64_t> gather_counts(int64_t mine, int root, MPI_Comm comm) {
  std::vector<int64_t> counts(rank_of(comm) == root ? size_t(size_of(comm)) : 0, 0);
  check(MPI_Gather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, root, comm), "MPI_Gather (counts)");
  return counts;
}

}  // namespace

template <class T>
void gather_into(std::span<const T> local, int root, MPI_Comm comm, std::span<T> out) {
  const int rank = rank_of(comm), size = size_of(comm);
  const std::vector<int64_t> counts = gather_counts(int64_t(local.size()), root, comm);
  if (rank != root) return send_pieces(local.data(), local.size() * sizeof(T), root, comm);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  // The ranks' counts follow from the caller's shapes, which every rank agreed on: a mismatch is gknn's bug.
  GKNN_EXPECT(total == int64_t(out.size()), ErrorCode::Internal, "gather_into: the ranks hold ", total,
              " elements, the destination ", out.size());
  size_t offset = 0;
  for (int r = 0; r < size; ++r) {
    T* const into = out.data() + offset;
    if (r == root)
      host_for(int64_t(local.size()), 1, int64_t(1) << 16, 0, [&](int64_t e) { into[e] = local[size_t(e)]; });
    else
      receive_pieces(into, size_t(counts[size_t(r)]) * sizeof(T), r, comm);
    offset += size_t(counts[size_t(r)]);
  }
}

template <class T>
GatheredParts<T> gather_parts(std::span<const T> local, int root, MPI_Comm comm, ReceiveSpace<T>& kept) {
  const int rank = rank_of(comm), size = size_of(comm);
  GatheredParts<T> out;
  out.counts = gather_counts(int64_t(local.size()), root, comm);
  if (rank != root) {
    send_pieces(local.data(), local.size() * sizeof(T), root, comm);
    return out;
  }
  for (int r = 0; r < size; ++r) {
    const size_t count = size_t(out.counts[size_t(r)]);
    if (r == root) {
      out.parts.push_back(local.data());
      continue;
    }
    if (kept.size() < size_t(size)) kept.resize(size_t(size));
    HostArray<T>& space = kept[size_t(r)];
    space.resize_for_overwrite(count);  // MPI_Recv writes every element
    receive_pieces(space.data(), count * sizeof(T), r, comm);
    out.parts.push_back(space.data());
  }
  return out;
}

template void gather_into(std::span<const float>, int, MPI_Comm, std::span<float>);
template void gather_into(std::span<const int64_t>, int, MPI_Comm, std::span<int64_t>);
template GatheredParts<float> gather_parts(std::span<const float>, int, MPI_Comm, ReceiveSpace<float>&);
template GatheredParts<int64_t> gather_parts(std::span<const int64_t>, int, MPI_Comm, ReceiveSpace<int64_t>&);
template GatheredParts<double> gather_parts(std::span<const double>, int, MPI_Comm, ReceiveSpace<double>&);

int64_t sum(int64_t value, MPI_Comm comm) {
  check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce (sum)");
  return value;
}

int64_t prefix_sum(int64_t value, MPI_Comm comm) {
  int64_t before = 0;
  check(MPI_Exscan(&value, &before, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Exscan");
  return rank_of(comm) == 0 ? 0 : before;  // MPI leaves rank 0's result undefined
}

bool same_everywhere(int64_t value, MPI_Comm comm) {
  int64_t range[2] = {value, -value};
  check(MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce (max)");
  return range[0] == -range[1];
}

}  // namespace gknn::detail::mpi
