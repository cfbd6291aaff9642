// grid_geometry.hpp: the cells of the join's grid index (side >= epsilon over the bounding box of the base), shared by
// the host grid and the CUDA grid so that both put every point in the same cell and visit the same 3^d cells.
//
// Why a query may trust its answer: a base point outside the 3^d cells around the query's cell differs from it by
// two cell coordinates in some dimension, so it lies farther than one cell side. The computed coordinates can be
// off by (cells per dimension) * 2^-52 of a cell, at most 2^-32 with <= 2^20 cells per dimension, so such a point
// is farther than side * (1 - 2^-31). A query is therefore certain when it holds k candidates whose squared float64
// distances are <= trusted_sq() = (side * (1 - 1e-8))^2; the margin is far above every rounding involved.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/hd.hpp"

namespace gknn::detail::join {

constexpr int kGridMaxDim = 8;

struct GridGeometry {
  int dim = 0;
  double side = 0;
  double lo[kGridMaxDim] = {};
  int64_t cells[kGridMaxDim] = {};     ///< cells along each dimension (>= 1)
  uint64_t stride[kGridMaxDim] = {};   ///< key = sum coord_j * stride_j (row-major over the cells)

  /// Cell coordinate of value x along dimension j, clamped to [-2, cells_j + 1] (a query outside the box stays
  /// two cells away from every base point, which keeps the argument above).
  GKNN_HD int64_t coord(int j, double x) const {
    const double c = std::floor((x - lo[j]) / side);
    if (!(c >= -2.0)) return -2;
    if (c > double(cells[j] + 1)) return cells[j] + 1;
    return static_cast<int64_t>(c);
  }
  GKNN_HD bool inside(int j, int64_t c) const { return c >= 0 && c < cells[j]; }
  GKNN_HD double trusted_sq() const {
    const double r = side * (1 - 1e-8);
    return r * r;
  }
  /// Number of neighbour offsets to enumerate: 3^dim.
  GKNN_HD int neighbour_offsets() const {
    int n = 1;
    for (int j = 0; j < dim; ++j) n *= 3;
    return n;
  }
};

/// The grid of side >= eps over [lo, hi]: sides grow where needed so that no dimension has more than
/// min(2^20, 2^(60/dim)) cells (keys fit 62 bits; coordinates stay exact to 2^-32 of a cell).
GridGeometry make_geometry(const double* lo, const double* hi, int dim, double eps);

}  // namespace gknn::detail::join
