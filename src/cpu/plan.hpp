// plan.hpp: how the CPU fast path cuts a search into cache-sized tiles and parallel work units.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gknn/types.hpp"

namespace gknn::detail::cpu {

/// The default SearchParams::memory_budget of the CPU backend (memory_budget = 0).
inline constexpr size_t kDefaultMemoryBudget = size_t(256) << 20;

struct SearchShape {
  int64_t n, q, dim, k;
  DistanceAlgorithm distance;  ///< resolved: Direct or Gemm
  SelectAlgorithm select;      ///< resolved: Sort, Heap or Quickselect
};

struct TilePlan {
  int threads = 1;
  int64_t query_block = 1;  ///< queries of one work unit (their selection states live together)
  int64_t tile_rows = 16;   ///< base rows of one distance tile
  int64_t base_parts = 1;   ///< > 1 when there are too few queries to occupy the threads: the base is split
                            ///< into this many ranges searched in parallel and the per-range top-k merged
  int64_t query_blocks(int64_t q) const { return (q + query_block - 1) / query_block; }
  /// Base rows per part: whole tiles, so that splitting never changes a tile's shape.
  int64_t part_rows(int64_t n) const {
    return ((n + base_parts - 1) / base_parts + tile_rows - 1) / tile_rows * tile_rows;
  }
};

/// Tile sizes from cache targets, shrunk until one thread's working set (key tile, kernel scratch, selection
/// states) fits memory_budget / max(threads, hardware threads). Below the smallest plan (one query, one
/// 16-row tile) the budget is exceeded rather than failing: Sort needs the n keys of at least one query.
///
/// The cuts are made for the machine's hardware threads, not for `threads`: SGEMM's rounding depends on
/// the shape of each call, and results must not change with SearchParams::threads. (GEMM keys may change
/// by float rounding with memory_budget, or when threads > hardware threads makes a binding budget tighter.)
TilePlan make_plan(const SearchShape& shape, size_t memory_budget, int threads);

/// Bytes one thread uses with this plan (what make_plan fits into the budget).
int64_t thread_bytes(const SearchShape& shape, const TilePlan& plan);

}  // namespace gknn::detail::cpu
