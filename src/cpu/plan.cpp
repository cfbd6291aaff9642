// plan.cpp: tile sizes of the CPU fast path.
//
// Cache targets (measured on the 2-core EPYC of bench/results/cpu_vs_faiss.md, 1 MiB L2 per core):
//  * Direct: a tile's packed panels stay in L2 while every query of the block streams over them, and the
//    block's queries stay in L1/L2 while the panels stream: ~128 KiB of panels, 64 queries.
//  * Gemm: OpenBLAS packs its operands itself; what matters is that the key tile (query_block x tile_rows
//    floats) is still in L2 when the selectors read it right after the SGEMM, and that SGEMM calls are big
//    enough to run at full speed.
#include "cpu/plan.hpp"

#include <omp.h>

#include <algorithm>

#include "cpu/distance/tile_kernel.hpp"
#include "cpu/select/selectors.hpp"

namespace gknn::detail::cpu {
namespace {

constexpr int64_t kPanelRows = 16;  // tile_rows stays a multiple of the Direct kernel's panel height
constexpr int64_t kDirectPanelBytes = 128 << 10;
constexpr int64_t kDirectQueryBlock = 64;
constexpr int64_t kGemmTileRows = 1024;
constexpr int64_t kGemmQueryBlock = 256;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t thread_bytes(const SearchShape& s, const TilePlan& plan) {
  const int64_t keys = plan.query_block * plan.tile_rows * int64_t(sizeof(float));
  const int64_t scratch = s.distance == DistanceAlgorithm::Direct ? direct_scratch_bytes(plan.tile_rows, s.dim) : 0;
  const int64_t states = plan.query_block * selector_bytes(s.select, s.k, plan.part_rows(s.n));
  return keys + scratch + states;
}

TilePlan make_plan(const SearchShape& s, size_t memory_budget, int threads) {
  TilePlan plan;
  plan.threads = std::max(1, threads);
  // Work is cut for the machine, not for `threads`, so that results do not depend on SearchParams::threads.
  const int64_t slots = std::max(1, omp_get_num_procs());
  const bool direct = s.distance == DistanceAlgorithm::Direct;
  const int64_t target_rows =
      direct ? std::max(kPanelRows, kDirectPanelBytes / (s.dim * int64_t(sizeof(float))) / kPanelRows * kPanelRows)
             : kGemmTileRows;
  plan.tile_rows = std::min(target_rows, round_up(s.n, kPanelRows));
  plan.query_block = direct ? kDirectQueryBlock : kGemmQueryBlock;

  // Too few queries for the threads: split the base instead, each part at least one tile.
  if (s.q < slots) plan.base_parts = std::clamp<int64_t>(ceil_div(s.n, plan.tile_rows), 1, slots);

  const int64_t budget = static_cast<int64_t>(memory_budget ? memory_budget : kDefaultMemoryBudget) /
                         std::max<int64_t>(slots, plan.threads);
  while (thread_bytes(s, plan) > budget) {
    const int64_t states = plan.query_block * selector_bytes(s.select, s.k, plan.part_rows(s.n));
    if (plan.tile_rows > kPanelRows && states < thread_bytes(s, plan) / 2)
      plan.tile_rows = std::max(kPanelRows, round_up(plan.tile_rows / 2, kPanelRows));
    else if (plan.query_block > 1)
      plan.query_block = std::max<int64_t>(1, plan.query_block / 2);
    else if (plan.tile_rows > kPanelRows)
      plan.tile_rows = std::max(kPanelRows, round_up(plan.tile_rows / 2, kPanelRows));
    else
      break;
  }

  // Balance: a multiple of `slots` blocks of equal size, none larger than what fits.
  const int64_t rounds = std::max<int64_t>(1, ceil_div(s.q, plan.query_block * slots));
  plan.query_block = std::max<int64_t>(1, ceil_div(s.q, rounds * slots));
  return plan;
}

}  // namespace gknn::detail::cpu
