// gknn/index.hpp: a FAISS-style flat (exact) index.
#pragma once

#include <memory>

#include "gknn/types.hpp"

namespace gknn {

/// Holds a database of vectors of one dimension and answers exact kNN queries. With Backend::Cuda the
/// database stays resident in device memory across searches.
///
/// Threads: `search` (both overloads) may be called concurrently from any number of host threads on one
/// Index; every call returns the same result as it would alone. On the CPU backend the searches run in
/// parallel (each call has its own buffers and OpenMP team; the database is only read). On the CUDA backend
/// the store holds one device pipeline and a mutex, so concurrent searches are serialised (safe, not faster).
/// The mutating calls (`add`, `add_with_ids`, `reset`, `set_p`, assignment) need exclusive access: do not
/// run them while another thread uses the same Index.
class Index {
 public:
  Index(int64_t dimension, Metric metric = Metric::SquaredL2, Backend backend = Backend::Auto);
  ~Index();
  Index(Index&&) noexcept;
  Index& operator=(Index&&) noexcept;

  /// Appends rows; their ids are their insertion positions (0, 1, ...), unless add_with_ids was used.
  void add(FloatView vectors);
  /// Appends 8-bit rows (host memory), stored as the floats of their values: the same index as adding those floats.
  /// A cuda index uploads the bytes and converts them on the device (a quarter of the float rows' host-to-device
  /// traffic).
  void add(ByteView vectors);
  /// Appends rows with user ids (int64, one per row). An index uses ids for all rows or for none.
  void add_with_ids(FloatView vectors, const int64_t* ids);
  void add_with_ids(ByteView vectors, const int64_t* ids);
  /// k nearest stored vectors of each query; indices are the ids. Other parameters come from `params`
  /// (its metric must equal the index metric or be left at the default squared L2 for a squared-L2 index).
  Result search(FloatView queries, int64_t k) const;
  Result search(FloatView queries, const SearchParams& params) const;
  /// Writes the result into caller-provided host or device arrays (see ResultView); allocates nothing.
  /// Queries holding NaN or Inf throw InvalidArgument naming the row and column, as everywhere; on a cuda index the
  /// scan of large host query sets runs beside the search, so `out` may then have been written (its contents are
  /// unspecified after any error).
  void search(FloatView queries, const SearchParams& params, const ResultView& out) const;
  void reset();

  int64_t size() const noexcept;
  int64_t dimension() const noexcept;
  Metric metric() const noexcept;
  Backend backend() const noexcept;
  /// p of Metric::Lp (default 2).
  void set_p(double p);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gknn
