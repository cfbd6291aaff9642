// driver.hpp: one join run in a resolved mode: epsilon, ordering, indexes, then the GPU driver thread and the CPU
// worker threads sharing the work queue (or the round-robin split).
#pragma once

#include <functional>
#include <memory>

#include "gknn/join.hpp"
#include "join/grid_searcher.hpp"
#include "join/problem.hpp"

namespace gknn::detail::join {

using SearcherFactory = std::function<std::unique_ptr<GridSearcher>()>;

/// mode: Hybrid, Cpu, Gpu or RoundRobin (resolved). `make_searcher` gives the GPU side (CUDA, or the host
/// emulation in tests); it is called only for Hybrid and Gpu. Fills `report`.
void run_join(const Problem& problem, const Output& output, JoinMode mode, const JoinParams& params,
              const SearcherFactory& make_searcher, JoinReport& report);

}  // namespace gknn::detail::join
