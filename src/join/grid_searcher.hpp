// grid_searcher.hpp: the GPU side of the join behind one interface: the CUDA grid (join/cuda_grid.cu) on a device,
// or the host grid emulating it (the same cells, the same trust rule) so the CPU tests run the whole machinery.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "join/epsilon.hpp"
#include "join/grid_geometry.hpp"
#include "join/problem.hpp"

namespace gknn::detail::join {

/// Where a searcher's range-query batches spent their time (JoinReport's gpu_* columns), summed over its batches.
struct GpuStages {
  double kernel_ms = 0;       ///< range-query kernels, device time (events)
  double setup_ms = 0;        ///< host: the chunks' buffers allocated
  double wait_ms = 0;         ///< host: waiting for a chunk's rows in pinned memory
  double scatter_ms = 0;      ///< host: the rows written into the result
  double result_wait_ms = 0;  ///< host: waiting for the result's allocation
  double index_alloc_ms = 0;  ///< host: the grid build's buffers allocated (every build)
};

class GridSearcher {
 public:
  virtual ~GridSearcher() = default;
  /// (Re)builds the grid index of the base with these cells.
  virtual void build(const GridGeometry& geometry) = 0;
  /// Range queries for the query rows `ids`: every query that is certain (k candidates within the trusted radius
  /// of grid_geometry.hpp) is written to the output; the ids of the others are returned (they failed).
  virtual std::vector<int64_t> search(const std::vector<int64_t>& ids) = 0;
  /// search() of every query row 0 .. queries.rows - 1, in an order of the searcher's choosing (the failed ids in
  /// that order). The host grid lists the ids; the CUDA grid runs a self-join's in its cell order, from the device.
  virtual std::vector<int64_t> search_all() = 0;
  /// Whether sample_histogram counts on the device (the host emulation does not: epsilon then samples on the CPU).
  virtual bool counts_histograms() const { return false; }
  /// counts[b] of the pairs (base row rows[s], base row p != rows[s]) in bin b of `binning`, over every base row
  /// (epsilon.hpp's WholeBaseHistogram). Only where counts_histograms().
  virtual std::vector<double> sample_histogram(const std::vector<int64_t>& rows, const Binning& binning);
  /// The time so far of its batches, apart (the host emulation times none).
  virtual GpuStages stages() const { return {}; }
};

/// rings: how far a query may grow before it fails (1: the seed's 3^d cells; see max_rings).
std::unique_ptr<GridSearcher> make_host_searcher(const Problem& problem, const Output& output, int rings);
/// Throws Unsupported without CUDA. threads_per_query: t of the seed (a power of two <= 32).
std::unique_ptr<GridSearcher> make_cuda_searcher(const Problem& problem, const Output& output, int device,
                                                 int threads_per_query, int rings);

}  // namespace gknn::detail::join
