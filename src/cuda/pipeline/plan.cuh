// plan.cuh: how many query rows and base rows one tile holds, under a device-memory budget.
//
// Memory of one search (bytes), for query tile tq, base tile tb, dimension d, k (kt = min(k, tb)):
//   query tiles       2 * tq * d * 4          double-buffered: the next tile uploads while this one computes
//   base tiles        2 * tb * d * 4          only when the base is streamed from the host
//   norms             (tq + tb) * 4
//   distance tile     tq * tb * 4            two-stage path only (PlanInput::key_matrix): a fused kernel that
//                                           serves the search writes lists, its splits' lists in its scratch
//   top-k lists       5 * tq * k * 12         running + merged list per in-flight query tile (2), tile list (1)
//   output tiles      2 * tq * out_k * 12     finalised tiles on their way to a host destination (two in flight;
//                                           run_search adds up to two more from what the plan left, output_slots.hpp)
//   selector scratch  SelectEntry::workspace_bytes(tq, tb, kt)
//   distance scratch  DistanceEntry::workspace_bytes(tq, tb, d)
// The planner starts from the whole problem (capped, see below) and halves the larger side until it fits:
// base tiles first while they are longer than kPreferredBaseRows (long rows amortise a selection's fixed
// cost), then query tiles, down to 1 x 1 (a budget below that is still served, as the smallest tiling).
// A large result to a host destination (more than kOverlapResultBytes) is cut into at least kOverlapTiles query
// tiles, so that copying tile i into the caller's memory overlaps the device work of tile i + 1.
// Base tiles shorter than the base stay multiples of 128 rows while > 128, which keeps tile pointers of a
// resident base 512-byte aligned (texture objects need it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {

/// Query rows per tile at most (kernels put query rows on grid.y in chunks; this keeps lists small).
constexpr int64_t kMaxQueryTile = 16384;
/// Base rows per tile at most (cuBLAS and CUB take 32-bit sizes).
constexpr int64_t kMaxBaseTile = int64_t(1) << 30;
constexpr int64_t kPreferredBaseRows = 1 << 16;

constexpr size_t kOverlapResultBytes = size_t(32) << 20;
constexpr int64_t kOverlapTiles = 8;

/// Device scratch bytes of a distance kernel on an nq x nb tile of dimension dim.
using DistanceWorkspaceBytesFn = size_t (*)(int64_t nq, int64_t nb, int64_t dim);

struct PlanInput {
  int64_t nq = 0, nb = 0, dim = 0, k = 0;
  size_t budget = 0;
  bool stream_base = false;
  SelectWorkspaceFn select_workspace = nullptr;
  DistanceWorkspaceBytesFn distance_workspace = nullptr;
  int64_t out_k = 0;  ///< the user's k when the result goes to host memory (output tiles), else 0
  bool key_matrix = true;  ///< false when a fused kernel serves every tile: no distance tile is allocated
};

struct TilePlan {
  int64_t query_rows = 0;
  int64_t base_rows = 0;
};

/// Bytes of device memory a search with these tiles uses (formula above).
size_t search_bytes(const PlanInput& in, int64_t query_rows, int64_t base_rows);
/// The tiling of a search (honours set_tile_override).
TilePlan plan_search(const PlanInput& in);

/// Device memory of select_k's tiles beyond the selected lists and the selector's scratch.
struct SelectTileBytes {
  bool staged = true;        ///< host rows: double-buffered input tiles (device views are read where they are)
  int64_t negate_stride = 0; ///< Descending: a negated copy of the tile, rows this far apart (0: none)
  int64_t out_k = 0;         ///< a finalised tile (values + indices, rows x out_k) per output slot (2), or 0
};
/// Rows per tile of select_k on rows of `cols` keys (labels: 8 more bytes per key).
int64_t plan_select_rows(int64_t rows, int64_t cols, int64_t k, bool labels, size_t budget,
                         SelectWorkspaceFn select_workspace, const SelectTileBytes& extra = {});

/// SearchParams::memory_budget when set, else a share of the device's free memory now.
size_t memory_budget(size_t requested);

/// True when a tile override forces streaming the base (hooks.hpp).
bool base_tile_forced();

}  // namespace gknn::detail::cuda
