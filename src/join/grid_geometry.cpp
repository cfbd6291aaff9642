#include "join/grid_geometry.hpp"

#include <algorithm>
#include <cmath>

#include "core/env_switch.hpp"
#include "gknn/error.hpp"

namespace gknn::detail::join {

GridGeometry make_geometry(const double* lo, const double* hi, int dim, double eps) {
  GKNN_EXPECT(dim >= 1 && dim <= kGridMaxDim, ErrorCode::Internal, "grid of dimension ", dim);
  GKNN_EXPECT(eps > 0 && std::isfinite(eps), ErrorCode::InvalidArgument, "epsilon must be positive and finite (got ",
              eps, ")");
  const double max_cells = std::min(std::ldexp(1.0, 20), std::floor(std::exp2(60.0 / dim)));
  GridGeometry g;
  g.dim = dim;
  g.side = eps;
  for (int j = 0; j < dim; ++j) g.side = std::max(g.side, (hi[j] - lo[j]) / (max_cells - 1));
  uint64_t stride = 1;
  for (int j = dim - 1; j >= 0; --j) {
    g.lo[j] = lo[j];
    // The same expression as coord(j, hi[j]) + 1, so the largest point falls in the last cell.
    g.cells[j] = static_cast<int64_t>(std::floor((hi[j] - lo[j]) / g.side)) + 1;
    g.stride[j] = stride;
    stride *= static_cast<uint64_t>(g.cells[j]);
  }
  return g;
}

int max_rings(int rings, int dim) {
  GKNN_EXPECT(rings >= 0, ErrorCode::Internal, "max_rings: rings ", rings, " not resolved (knn_join resolves -1)");
  if (rings > 0) {
    GKNN_EXPECT(std::pow(2.0 * rings + 1, dim) < 2147483647.0, ErrorCode::InvalidArgument, "knn_join: rings = ", rings,
                " in ", dim, " dimensions would visit (2 rings + 1)^", dim, " = ", std::pow(2.0 * rings + 1, dim),
                " cells per query, more than 2^31 - 1; use fewer rings (0 = automatic)");
    return rings;
  }
  // Ring r enumerates its whole cube, (2r + 1)^d offsets: keep the sum over the rings within a budget of 800 (rings
  // 7, 3, 2, 1 in 2-, 3-, 4-, 6-D). A query that fails enumerates all of it, and a coarser grid serves it better:
  // 10^7 points, K = 32 on the H100 (2026-11-28), EXPO4D 3.31 s with a budget of 20 000 (4 rings), 1.04 with 800;
  // EXPO6D 9.88 -> 6.96; EXPO2D 0.58 -> 0.51 (budget 100); the uniform sets, which fail nowhere, unchanged.
  // GKNN_JOIN_RING_CELLS=N another budget (read once), for such A/Bs.
  static const double budget = env_positive("GKNN_JOIN_RING_CELLS", 800.0);
  int r = 1;
  double visited = std::pow(3.0, dim);
  while (visited + std::pow(2.0 * (r + 1) + 1, dim) <= budget) visited += std::pow(2.0 * (++r) + 1, dim);
  return r;
}

}  // namespace gknn::detail::join
