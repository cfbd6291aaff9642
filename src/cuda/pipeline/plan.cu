// plan.cu: tile planning (see plan.cuh for the memory model).
#include <algorithm>
#include <mutex>

#include "cuda/common/device.cuh"
#include "cuda/hooks.hpp"
#include "cuda/pipeline/plan.cuh"

namespace gknn::detail::cuda {
namespace {

std::mutex g_override_mutex;
TileOverride g_override;

TileOverride current_override() {
  std::lock_guard<std::mutex> lock(g_override_mutex);
  return g_override;
}

/// Share of free device memory a search may use when no budget is given: leaves room for cuBLAS/CUB internals,
/// other processes and fragmentation.
constexpr double kFreeShare = 0.7;

int64_t halve(int64_t n) { return (n + 1) / 2; }

/// Halves a base tile, keeping it a multiple of 128 rows while it is larger than 128 (see plan.cuh).
int64_t halve_base(int64_t n) {
  if (n <= 128) return halve(n);
  return (halve(n) + 127) / 128 * 128;
}

}  // namespace

void set_tile_override(TileOverride tiles) {
  std::lock_guard<std::mutex> lock(g_override_mutex);
  g_override = tiles;
}

bool base_tile_forced() { return current_override().base_rows > 0; }

size_t search_bytes(const PlanInput& in, int64_t tq, int64_t tb) {
  const size_t q = static_cast<size_t>(tq), b = static_cast<size_t>(tb), d = static_cast<size_t>(in.dim);
  const size_t k = static_cast<size_t>(in.k), kt = std::min(k, b);
  size_t bytes = 2 * q * d * sizeof(float) + (q + b) * sizeof(float) + (in.key_matrix ? q * b * sizeof(float) : 0);
  if (in.stream_base) bytes += 2 * b * d * sizeof(float);
  bytes += 5 * q * k * (sizeof(float) + sizeof(int64_t));
  bytes += 2 * q * static_cast<size_t>(in.out_k) * (sizeof(float) + sizeof(int64_t));
  // Without a key matrix (the fused kernel serves every tile) no selection reads a tile: only its splits' lists,
  // whose selection takes the pipeline's kept workspace as it goes. Not asked: a CUB-based entry's size query made
  // 12 occupancy calls, 24 a search (two plans) in a torch-profiler trace of Garcia's shape (H200).
  if (in.select_workspace && in.key_matrix) bytes += in.select_workspace(tq, tb, static_cast<int64_t>(kt));
  if (in.distance_workspace) bytes += in.distance_workspace(tq, tb, in.dim);
  return bytes;
}

TilePlan plan_search(const PlanInput& in) {
  const TileOverride forced = current_override();
  TilePlan plan{std::min(in.nq, kMaxQueryTile), std::min(in.nb, kMaxBaseTile)};
  const size_t result_bytes = static_cast<size_t>(in.nq) * static_cast<size_t>(in.out_k) * 12;
  if (result_bytes > kOverlapResultBytes)
    plan.query_rows = std::min(plan.query_rows, std::max<int64_t>(1, (in.nq + kOverlapTiles - 1) / kOverlapTiles));
  if (forced.query_rows > 0) plan.query_rows = std::min(in.nq, forced.query_rows);
  if (forced.base_rows > 0) plan.base_rows = std::min(in.nb, forced.base_rows);
  if (forced.query_rows > 0 || forced.base_rows > 0) return plan;
  while (search_bytes(in, plan.query_rows, plan.base_rows) > in.budget &&
         (plan.query_rows > 1 || plan.base_rows > 1)) {
    if ((plan.base_rows > kPreferredBaseRows || plan.query_rows == 1) && plan.base_rows > 1)
      plan.base_rows = halve_base(plan.base_rows);
    else
      plan.query_rows = halve(plan.query_rows);
  }
  return plan;
}

int64_t plan_select_rows(int64_t rows, int64_t cols, int64_t k, bool labels, size_t budget,
                         SelectWorkspaceFn select_workspace, const SelectTileBytes& extra) {
  const TileOverride forced = current_override();
  if (forced.query_rows > 0) return std::min(rows, forced.query_rows);
  auto bytes = [&](int64_t r) {
    const size_t n = static_cast<size_t>(r) * static_cast<size_t>(cols);
    size_t b = extra.staged ? 2 * n * (sizeof(float) + (labels ? sizeof(int64_t) : 0)) : 0;  // double-buffered
    b += static_cast<size_t>(r) * static_cast<size_t>(extra.negate_stride) * sizeof(float);
    b += 2 * static_cast<size_t>(r * extra.out_k) * (sizeof(float) + sizeof(int64_t));
    b += 2 * static_cast<size_t>(r * k) * (sizeof(float) + sizeof(int64_t));
    return b + (select_workspace ? select_workspace(r, cols, k) : 0);
  };
  int64_t r = std::min(rows, kMaxQueryTile);
  while (r > 1 && bytes(r) > budget) r = halve(r);
  return r;
}

size_t memory_budget(size_t requested) {
  if (requested > 0) return requested;
  size_t free_bytes = 0, total_bytes = 0;
  device_memory(&free_bytes, &total_bytes);
  return static_cast<size_t>(static_cast<double>(free_bytes) * kFreeShare);
}

}  // namespace gknn::detail::cuda
