// grid.hpp: the join's grid index on the host: only non-empty cells, their keys sorted, the point ids grouped by
// cell. Orders the work queue by cell population, and answers range queries exactly like the CUDA kernel (the
// host emulation of the GPU side that the CPU tests run).
#pragma once

#include <cstdint>
#include <vector>

#include "gknn/types.hpp"
#include "join/grid_geometry.hpp"
#include "join/neighbours.hpp"

namespace gknn::detail::join {

struct BoundingBox {
  double lo[kGridMaxDim] = {};
  double hi[kGridMaxDim] = {};
};
BoundingBox bounding_box(FloatView points);

/// Cell key of a point, or UINT64_MAX when it lies outside the grid (a query of R ⋈ S).
uint64_t cell_key(const GridGeometry& g, const float* point);

class HostGrid {
 public:
  HostGrid(FloatView base, const GridGeometry& geometry);

  const GridGeometry& geometry() const { return geometry_; }
  /// Points of the base in the cell of `point` (0 when that cell is empty or outside the grid).
  int64_t population(const float* point) const;
  /// Every base id by the population of its cell, largest first, ties by cell key then id: a self-join's work
  /// queue (order_by_population), read off the grid's cells instead of sorting the ids.
  std::vector<int64_t> ids_by_population() const;

  /// The seed's range query (rings = 1): candidates from the 3^d cells around the query offered to `best`
  /// (capacity k, empty); with rings > 1 the query grows outward ring by ring until it is certain. True when it is
  /// certain (grid_geometry.hpp): then `best` is exact.
  bool range_query(const float* query, int64_t exclude, int rings, BoundedNeighbours& best) const;

 private:
  int64_t find_cell(uint64_t key) const;  ///< index into keys_, -1 when empty

  FloatView base_;
  GridGeometry geometry_;
  std::vector<uint64_t> keys_;   ///< sorted keys of the non-empty cells
  std::vector<int64_t> starts_;  ///< cell c holds ids_[starts_[c], starts_[c+1])
  std::vector<int64_t> ids_;     ///< base ids grouped by cell, ascending within a cell
};

}  // namespace gknn::detail::join
