// gknn/join.hpp: the exact low-dimensional kNN self-join (every point's k nearest other points) and R ⋈ S.
//
// The grid path follows Gowanlock's HybridKNN-Join: an epsilon chosen by sampling, a grid of cells of side
// epsilon over the bounding box, batched range queries on the GPU over the 3^d adjacent cells, a kd-tree search
// on the CPU for the sparse regions, and a work queue that hands the densest points to the GPU and the sparsest
// to the CPU. The result is exact under the library's total order (types.hpp): ascending distance, ties by the
// smaller index, distances computed in float64 as the oracle does (then rounded to float for the output).
// See docs/join.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "gknn/types.hpp"

namespace gknn {

enum class JoinMode {
  Auto,        ///< with a CUDA device: the measured plan's mode for this device, n, d and k (JoinReport::note says
               ///< which row), else GPU only with growing rings; without a device: Cpu
  Hybrid,      ///< GPU driver thread (grid range queries) + CPU worker threads (kd-tree), sharing one work queue
  Cpu,         ///< CPU worker threads (kd-tree) drawing batches from the work queue (the seed's CPU-ONLY)
  Gpu,         ///< GPU only: monolithic batches of every unfinished point until all have their k (GPU-ONLY)
  RoundRobin,  ///< CPU threads, point i to thread i mod P without a queue (the seed's CPU-ONLY-RR)
};
// The CPU kd-tree is nanoflann's (header-only; Debian/Ubuntu libnanoflann-dev), optional when gknn is built.
// Without it (BuildInfo::join_kdtree false) Cpu, Hybrid and RoundRobin throw gknn::Error(Unsupported) naming the
// package, and Auto takes Gpu when there is a device (saying so in JoinReport::note).

/// Where the time and the work of one join went (filled when JoinParams::report is set). Times in milliseconds.
struct JoinReport {
  JoinMode mode = JoinMode::Auto;  ///< the mode that ran (Auto resolved)
  double result_ms = 0;            ///< allocating the q x k result (pages populated in parallel, no zero fill), on a
                                   ///< thread of its own beside epsilon, ordering and the first grid (overlapped)
  double epsilon_ms = 0;           ///< choosing epsilon by sampling
  double ordering_ms = 0;          ///< host grid + ordering the work queue by cell population
  double upload_ms = 0;            ///< the GPU side's setup: the base (and R ⋈ S queries) copied to the device, and
                                   ///< the device and pinned buffers of the grid and the chunks allocated
  double index_ms = 0;             ///< the first GPU grid (built on the device; the upload apart)
  double index_alloc_ms = 0;       ///< of the GPU grids' builds (every one): host time allocating their buffers
  double cpu_index_ms = 0;         ///< the CPU kd-tree (built while the GPU already works)
  double gpu_ms = 0;               ///< GPU side: work start to its last batch (grids and re-indexing included)
  // The GPU side's range-query batches, apart (issue 14: gpu_ms alone could not tell the kernel from the host's
  // scatter of the rows into the result). The kernels and the downloads overlap the host's work, so these do not add
  // up to gpu_ms; the host ones (setup, wait, scatter) are in turn on the GPU thread, and with index_ms they do.
  double gpu_kernel_ms = 0;        ///< range-query kernels, device time (CUDA events), summed over chunks and batches
  double gpu_setup_ms = 0;         ///< host: the chunks' buffers sized (allocated by the searcher's setup, in
                                   ///< upload_ms, unless a batch outgrows them) and a full self-join batch's
                                   ///< cell order sorted into query ranges (a device sort)
  double gpu_wait_ms = 0;          ///< host: waiting for a chunk's rows to land in pinned memory (kernel + download)
  double gpu_scatter_ms = 0;       ///< host: chunks' rows copied (query ranges) or scattered from pinned memory
                                   ///< into the result (page faults of result pages not yet populated included)
  double result_wait_ms = 0;       ///< writers waiting for the result's allocation (Output::ready; GPU thread only)
  double cpu_ms = 0;               ///< CPU workers: start (kd-tree build included) to the last worker's end
  double total_ms = 0;             ///< wall time of the call (the result's allocation included)
  double load_imbalance = 0;       ///< |T_cpu - T_gpu| / T (hybrid only; 0 otherwise)
  double epsilon_min = 0;          ///< epsilon chosen by sampling (or the override); Gpu mode with rings != 1
                                   ///< takes 2^(1/d) times the seed's value (twice the mean count within a side)
  double epsilon_final = 0;        ///< cell side of the last GPU grid
  int64_t reindexings = 0;         ///< GPU grid rebuilds after epsilon grew
  int64_t gpu_batches = 0;
  int64_t cpu_batches = 0;
  int64_t gpu_queries = 0;         ///< queries the GPU answered
  int64_t cpu_queries = 0;         ///< queries the CPU answered
  int64_t failed_queries = 0;      ///< GPU queries that failed (fewer than k certain within epsilon) and were re-queued
  int64_t brute_force_queries = 0; ///< queries finished by brute force (GPU-only tail, d > 8 fallback)
  std::string note;                ///< e.g. why the grid path was not used (d > 8: brute force)
};

struct JoinParams {
  Metric metric = Metric::SquaredL2;  ///< SquaredL2 or L2
  JoinMode mode = JoinMode::Auto;
  double epsilon = 0;                 ///< > 0: initial epsilon (skips the sampling); 0 = chosen by sampling
  int threads_per_query = 8;          ///< t: GPU threads sharing one query's candidates; 1, 2, 4, 8, 16 or 32
  int rings = -1;                     ///< rings of cells a GPU query may grow through before it fails: 1 = the
                                      ///< seed's 3^d cells; > 1 beyond the seed (fewer failed queries); 0 = auto
                                      ///< (the most that keep the cells visited within 800); -1 = the mode's
                                      ///< default: 1 for an explicit mode, the plan's choice for Auto
  double n_large = 0.4;               ///< first monolithic GPU batch, fraction of the points (halved each round)
  double n_small = 0.005;             ///< GPU batch after the monolithic rounds
  double n_cpu = 0.005;               ///< CPU batch
  double cpu_window = 0.4;            ///< fraction reserved for the CPU during the monolithic rounds (n_Cwin)
  int cpu_threads = 0;                ///< CPU worker threads; 0 = all hardware threads (hybrid: one less)
  int device = 0;                     ///< CUDA device ordinal
  ProgressCallback progress;          ///< fraction of the points done; called from worker threads
  JoinReport* report = nullptr;       ///< when set, filled with the phases and counts of the join
};

/// Self-join: row i holds the k nearest points of row i among the OTHER rows (row i itself excluded by index, so
/// duplicates of it are neighbours). Throws gknn::Error(InvalidArgument) for an empty input, k <= 0, k >= n, a
/// NaN/Inf coordinate (naming its row), an unsupported metric or parameter. d > 8: exact brute force through
/// gknn::search (JoinReport::note says so).
Result knn_join(FloatView points, int64_t k, const JoinParams& params = {});
/// R ⋈ S: the k nearest base rows of every query row (nothing excluded). k > base rows pads like gknn::search.
Result knn_join(FloatView queries, FloatView base, int64_t k, const JoinParams& params = {});

/// Largest dimension of the grid path (beyond it knn_join falls back to brute force).
constexpr int64_t kJoinMaxGridDim = 8;

std::string to_string(JoinMode mode);
/// "auto", "hybrid", "cpu", "gpu", "round_robin" (also "round-robin"); InvalidArgument naming them otherwise.
JoinMode parse_join_mode(std::string_view name);

}  // namespace gknn
