// grid_geometry.hpp: the cells of the join's grid index (side >= epsilon over the bounding box of the base), shared by
// the host grid and the CUDA grid so that both put every point in the same cell and visit the same 3^d cells.
//
// Why a query may trust its answer: a base point outside the 3^d cells around the query's cell differs from it by
// two cell coordinates in some dimension, so it lies farther than one cell side. The computed coordinates can be
// off by (cells per dimension) * 2^-52 of a cell, at most 2^-32 with <= 2^20 cells per dimension, so such a point
// is farther than side * (1 - 2^-31). A query is therefore certain when it holds k candidates whose squared float64
// distances are <= trusted_sq() = (side * (1 - 1e-8))^2; the margin is far above every rounding involved.
// Beyond the seed, a query may grow outward ring by ring: once every cell within r of its own is visited, a point
// outside differs by r + 1 coordinates somewhere, hence lies farther than side * (r - 2^-31), and
// trusted_sq(r) = (r * side * (1 - 1e-8))^2 is trusted. A query outside the grid (R ⋈ S) is clamped two cells
// beyond its edge; every base point is on the far side of the clamp, so the bound still holds.
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
  /// Squared radius a query may trust once the cells within `ring` of its own are visited (ring 1: the 3^d cells).
  GKNN_HD double trusted_sq(int ring = 1) const {
    const double r = ring * side * (1 - 1e-8);
    return r * r;
  }
  /// Offsets of the cube of cells within `ring`: (2 ring + 1)^dim.
  GKNN_HD int64_t ring_offsets(int ring) const {
    int64_t n = 1;
    for (int j = 0; j < dim; ++j) n *= 2 * ring + 1;
    return n;
  }
  /// Cell number `offset` of the cube within `ring` around `centre`: false when it lies outside the grid or, for
  /// ring > 1, inside the previous ring's cube (already visited); else its key.
  /// 32-bit division: the cubes enumerated stay far below 2^31 offsets (max_rings), and the GPU's 64-bit division
  /// is a long instruction sequence, paid for every cell of every query. Dim > 0: the dimension as a compile-time
  /// constant (== dim), so that the loop unrolls and `centre` stays in registers (the CUDA kernel).
  template <int Dim = 0>
  GKNN_HD bool ring_cell(const int64_t* centre, int ring, int64_t cube_offset, uint64_t& key) const {
    const int width = 2 * ring + 1;
    int offset = static_cast<int>(cube_offset);
    bool on_shell = ring == 1;
    key = 0;
    const int dims = Dim > 0 ? Dim : dim;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < dims; ++j, offset /= width) {
      const int64_t delta = offset % width - ring;
      on_shell = on_shell || delta == ring || delta == -ring;
      const int64_t c = centre[j] + delta;
      if (!inside(j, c)) return false;
      key += static_cast<uint64_t>(c) * stride[j];
    }
    return on_shell;
  }
};

/// How many rings a query may grow before it fails: `rings` when > 0; 0 = as many as keep the cells enumerated
/// over all rings within 800 (1-D: 27, 2-D: 7, 3-D: 3, 4-D: 2, 5- to 8-D: 1; GKNN_JOIN_RING_CELLS another budget).
int max_rings(int rings, int dim);

/// The grid of side >= eps over [lo, hi]: sides grow where needed so that no dimension has more than
/// min(2^20, 2^(60/dim)) cells (keys fit 62 bits; coordinates stay exact to 2^-32 of a cell).
GridGeometry make_geometry(const double* lo, const double* hi, int dim, double eps);

}  // namespace gknn::detail::join
