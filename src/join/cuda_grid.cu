// cuda_grid.cu: the GPU side of the join: the grid index built on the device (keys of every point, CUB radix sort,
// run-length encoding of the non-empty cells, a scan for their starts), and the batched range-query kernel of the
// seed: t threads per query split every adjacent cell's points, each keeps its own exact top-k, and the first
// thread of the group merges them. A query is answered only when it is certain (grid_geometry.hpp); otherwise it
// fails and goes back to the work queue. With rings > 1 (beyond the seed) a query that is not yet certain grows
// outward ring by ring inside the kernel before it fails.
// Beyond the seed's kernel, which kept every lane's list in global memory: the lists live in shared memory when
// they fit (k up to a few hundred), and a batch runs as a pipeline of chunks, the host scattering one chunk's rows
// into the result while the device computes the next. And the kernel prunes: ring 1 is visited nearest cells
// first, the group keeps a bound that its query's k-th distance cannot exceed (group_bound), and a cell whose every
// point lies beyond it is neither looked up nor read (at 6-D most of the 729), nor is a farther candidate ranked;
// the points of a batch of t cells are dealt over the t lanes as one sequence, so no lane idles at a cell's end
// (Walk::Dealt, every dimension), or taken cell by cell, each cell's points split over the lanes (Walk::Cells,
// kept for A/B with GKNN_JOIN_WALK): H200 2026-11-27, 10^7 points, GPU side: UNIF3D K = 16 cells 572 ms, dealt
// 305 ms; UNIF6D K = 32 cells 2935 ms, dealt 2252 ms.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string_view>
#include <utility>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/common/buffer.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/error.cuh"
#include "cuda/common/pinned_pool.cuh"
#include "cuda/pipeline/staging.cuh"
#include "gknn/error.hpp"
#include "join/grid_searcher.hpp"

namespace gknn::detail::join {
namespace {

using detail::cuda::DeviceBuffer;
using detail::cuda::PinnedBuffer;
using detail::cuda::Stager;
using detail::cuda::Stream;

using detail::cuda::Event;
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

constexpr int kBlock = 256;

// Page-locked host memory (the chunks' buffers) comes from the process's PinnedPool (cuda/common/pinned_pool.cuh),
// kept from one join to the next: a 10^7 x 16 join's chunks are ~70 MB of cudaMallocHost, tens of ms of every call
// to lock and unlock, and beside the result's page population a wait for the mmap lock besides (setup 73 ms on the
// H100, issue 14).
using detail::cuda::PooledPinned;

/// The base upload's staging slots (two pinned 32 MB slots: Stager), kept per device from one join to the next
/// for the reason PinnedPool gives (64 MB locked and unlocked per call); at most two sets a device (joins at once).
class StagingCache {
 public:
  using Slots = detail::cuda::StagingSlots<float>;
  /// Slots of `device` (the current one: their events are made on it), for one upload at a time.
  static std::unique_ptr<Slots> take(int device) {
    {
      const std::lock_guard<std::mutex> lock(mutex());
      auto& kept = free_slots()[device];
      if (!kept.empty()) {
        std::unique_ptr<Slots> slots = std::move(kept.back());
        kept.pop_back();
        return slots;
      }
    }
    return std::make_unique<Slots>();
  }
  /// Gives slots back (their copies finished).
  static void give(int device, std::unique_ptr<Slots> slots) noexcept {
    try {
      const std::lock_guard<std::mutex> lock(mutex());
      auto& kept = free_slots()[device];
      if (kept.size() < 2) kept.push_back(std::move(slots));
    } catch (...) {  // no room to keep them: freed
    }
  }

 private:
  // Never destroyed, as PinnedPool.
  static std::mutex& mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::map<int, std::vector<std::unique_ptr<Slots>>>& free_slots() {
    static auto* slots = new std::map<int, std::vector<std::unique_ptr<Slots>>>;
    return *slots;
  }
};
// A chunk of range queries: small enough that the host's scatter of one overlaps the next one's kernel and that
// the two chunks' pinned buffers stay cheap to allocate, large enough to fill the device.
constexpr int64_t kChunkQueries = int64_t(1) << 18;
constexpr size_t kChunkBytes = size_t(64) << 20;

/// Key of point i's cell (every base point lies inside the grid).
__global__ void cell_keys_kernel(const float* points, int64_t n, GridGeometry g, uint64_t* keys, uint32_t* ids) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  uint64_t key = 0;
  for (int j = 0; j < g.dim; ++j) key += static_cast<uint64_t>(g.coord(j, points[i * g.dim + j])) * g.stride[j];
  keys[i] = key;
  ids[i] = static_cast<uint32_t>(i);
}

/// The base coordinates in cell order, so that the threads of a query read a cell's points contiguously.
__global__ void gather_kernel(const float* points, int64_t n, int dim, const uint32_t* ids, float* sorted) {
  const int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (p >= n) return;
  for (int j = 0; j < dim; ++j) sorted[p * dim + j] = points[int64_t(ids[p]) * dim + j];
}

/// The query range (id / range) of every cell-ordered point: the key by which CudaSearcher::order_by_range sorts
/// the grid's cell order, stably, into query ranges each still in cell order.
__global__ void range_keys_kernel(const uint32_t* ids, int64_t n, uint32_t range, uint32_t* keys) {
  const int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (p < n) keys[p] = ids[p] / range;
}

/// The exact float64 squared distance of the library's oracle (exact_key): one subtraction, one product, one sum
/// per coordinate, in order, each rounded on its own (no fused multiply-add), so GPU and CPU rank identically.
template <int Dim>
__device__ double exact_squared(const double* q, const float* x) {
  double acc = 0;
#pragma unroll
  for (int j = 0; j < Dim; ++j) {
    const double d = __dsub_rn(q[j], static_cast<double>(x[j]));
    acc = __dadd_rn(acc, __dmul_rn(d, d));
  }
  return acc;
}

/// (d, i) < (e, j) in the total order.
__device__ bool before(double d, int64_t i, double e, int64_t j) { return d < e || (d == e && i < j); }

/// lower_bound of key among the sorted non-empty cell keys; -1 when the cell is empty.
__device__ int64_t find_cell(const uint64_t* keys, int64_t cells, uint64_t key) {
  int64_t lo = 0, hi = cells;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < cells && keys[lo] == key ? lo : -1;
}

struct GridView {
  GridGeometry g;
  const uint64_t* keys;   ///< sorted non-empty cell keys
  const int64_t* starts;  ///< cell c: ids[starts[c], starts[c+1])
  const uint32_t* ids;    ///< base id of each cell-ordered point
  const float* points;    ///< base coordinates in cell order
  int64_t cells;
  const int64_t* dense;   ///< when the grid has few cells in all: key -> ids[dense[key], dense[key+1]); else null
  const uint16_t* near_first;  ///< the 3^d offsets of ring 1, fewest non-zero deltas first (nearest_first_order)

  /// The points of the cell with this key: [start, end), empty for an empty cell.
  __device__ void range(uint64_t key, int64_t& start, int64_t& end) const {
    if (dense) {
      start = dense[key];
      end = dense[key + 1];
      return;
    }
    const int64_t cell = find_cell(keys, cells, key);
    start = cell >= 0 ? starts[cell] : 0;
    end = cell >= 0 ? starts[cell + 1] : 0;
  }
};

/// dense[key] = the start of the first non-empty cell whose key is >= key (n past the last), for every key of the
/// grid and one more: the cell of key k then holds ids[dense[k], dense[k + 1]), one load instead of a search.
__global__ void dense_starts_kernel(const uint64_t* keys, int64_t cells, const int64_t* starts, uint64_t total,
                                    int64_t* dense) {
  const uint64_t key = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (key > total) return;
  int64_t lo = 0, hi = cells;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  dense[key] = starts[lo];
}

struct QueryBatch {
  const float* queries;
  const int64_t* query_ids;
  const uint32_t* cell_ids;  ///< when set, slot s queries base id cell_ids[s] (query_ids unused): a self-join's batch
                             ///< of every point, in the grid's cell order (GridView::ids from this chunk's first)
  int64_t count;
  int k;
  int t;
  int rings;
  bool self;
  bool l2;
  bool shared_lists;  ///< the lanes' lists in dynamic shared memory; else in list_d / list_i / list_n
  double* list_d;     ///< count * t lists of k (global lists only)
  uint32_t* list_i;
  int* list_n;        ///< count * t
  float* out_d;       ///< count * k
  uint32_t* out_i;    ///< base ids below 2^32 (the grid's limit): 8 bytes an entry down, not 12 (the host widens)
  unsigned char* ok;   ///< count
  /// Where a query's row goes in out_d / out_i / ok: at its slot, or (rows_by_query) at its query id less row_base.
  /// A self-join's batch of every point runs its chunks as query ranges [row_base, row_base + count), each taken
  /// in the grid's cell order, so that the rows come down in query order and the host copies them contiguously.
  int64_t row_base = 0;
  bool rows_by_query = false;
};

/// One lane's sorted candidate list (squared float64 distances, base ids below 2^32) and its length. In shared memory
/// entry e of the lane on block thread x lies at e * B + x for a block of B threads, so that the lanes of a warp hit
/// different banks, and the next lane's list starts one element further; in global memory a lane's k entries are
/// contiguous and the next lane's list starts k elements further.
struct LaneList {
  double* d;
  uint32_t* i;
  int* n;
  int stride;  ///< between the entries of one list
  int step;    ///< to the same entry of the next lane's list
  __device__ double& dist(int e) const { return d[int64_t(e) * stride]; }
  __device__ uint32_t& id(int e) const { return i[int64_t(e) * stride]; }
  __device__ LaneList lane(int delta) const {
    return {d + int64_t(delta) * step, i + int64_t(delta) * step, n + delta, stride, step};
  }
};

/// Inserts (d, id) into a sorted list of at most k entries (held n), keeping the k first in the total order.
__device__ void insert_sorted(const LaneList& l, int& n, int k, double d, uint32_t id) {
  if (n == k && !before(d, id, l.dist(k - 1), l.id(k - 1))) return;
  int pos = n < k ? n++ : k - 1;
  while (pos > 0 && before(d, id, l.dist(pos - 1), l.id(pos - 1))) {
    l.dist(pos) = l.dist(pos - 1);
    l.id(pos) = l.id(pos - 1);
    --pos;
  }
  l.dist(pos) = d;
  l.id(pos) = id;
}

/// Lane 0 of a certain query's group (`first` is its list): the k first of the group's t sorted lists, as row
/// `slot` of the batch's output.
__device__ void merge_lists(const QueryBatch& b, int64_t slot, const LaneList& first) {
  const int t = b.t, k = b.k;
  int head[32];
  for (int l = 0; l < t; ++l) head[l] = 0;
  for (int r = 0; r < k; ++r) {
    int best = -1;
    double best_d = 0;
    uint32_t best_i = 0;
    for (int l = 0; l < t; ++l) {
      const LaneList list = first.lane(l);
      if (head[l] == *list.n) continue;
      const double d = list.dist(head[l]);
      const uint32_t i = list.id(head[l]);
      if (best < 0 || before(d, i, best_d, best_i)) {
        best = l;
        best_d = d;
        best_i = i;
      }
    }
    ++head[best];
    b.out_d[slot * k + r] = static_cast<float>(b.l2 ? sqrt(best_d) : best_d);
    b.out_i[slot * k + r] = best_i;
  }
}

/// Sum of v over the t lanes of this lane's group (t divides 32; groups are aligned within the warp).
__device__ int group_sum(int v, int t, unsigned mask) {
  for (int offset = t / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset);
  return v;
}

/// This thread's list: in the block's dynamic shared memory (all distances, then all ids, then the lengths) or in
/// the batch's global lists.
__device__ LaneList lane_list(const QueryBatch& b, int64_t slot, int lane, unsigned char* shared) {
  if (b.shared_lists) {
    double* d = reinterpret_cast<double*>(shared);
    uint32_t* i = reinterpret_cast<uint32_t*>(d + int64_t(blockDim.x) * b.k);
    int* n = reinterpret_cast<int*>(i + int64_t(blockDim.x) * b.k);
    return {d + threadIdx.x, i + threadIdx.x, n + threadIdx.x, int(blockDim.x), 1};
  }
  const int64_t list = slot * b.t + lane;
  return {b.list_d + list * b.k, b.list_i + list * b.k, b.list_n + list, 1, b.k};
}

/// Candidate `id` at coordinates x: skipped when it is the query itself, kept when within `bound` (the group's
/// pruning bound: no farther candidate can be among the query's k nearest, nor count for its certainty).
template <int Dim>
__device__ void consider(const QueryBatch& b, const double* qv, int64_t q, double bound, const LaneList& mine, int& n,
                         uint32_t id, const float* x) {
  if (b.self && id == q) return;
  const double d = exact_squared<Dim>(qv, x);
  if (d <= bound) insert_sorted(mine, n, b.k, d, id);
}

/// The candidates at positions at(j) of the cell-ordered base for j = lane, lane + t, ... below `total`, two per step,
/// both loaded before either is ranked: twice the loads in flight. `at` is called with increasing j.
template <int Dim, class At>
__device__ void rank_points(const GridView& grid, const QueryBatch& b, const double* qv, int64_t q, double bound,
                            const LaneList& mine, int& n, int lane, int64_t total, At at) {
  int64_t j = lane;
  for (; j + b.t < total; j += 2 * b.t) {
    const int64_t p0 = at(j), p1 = at(j + b.t);
    const uint32_t id0 = grid.ids[p0], id1 = grid.ids[p1];
    float x0[Dim], x1[Dim];
#pragma unroll
    for (int d = 0; d < Dim; ++d) {
      x0[d] = grid.points[p0 * Dim + d];
      x1[d] = grid.points[p1 * Dim + d];
    }
    consider<Dim>(b, qv, q, bound, mine, n, id0, x0);
    consider<Dim>(b, qv, q, bound, mine, n, id1, x1);
  }
  if (j < total) {
    const int64_t p = at(j);
    consider<Dim>(b, qv, q, bound, mine, n, grid.ids[p], grid.points + p * Dim);
  }
}

/// How a group reads the points of its batch of t cells (after the lookups and the bound, which are the same).
///   Cells: cell by cell, each cell's points split over the t lanes (the walk before 22740e9): a lane idles at a
///     cell's end, but a cell costs two shuffles. Low dimensions: 3^d cells of ~k / 2 points, few pruned.
///   Dealt: the batch's points numbered one after the other and dealt over the lanes (a prefix sum, the cells'
///     starts in shared memory, a cell search per candidate): no lane idles. High dimensions: 3^d cells of few
///     points each, most pruned, so the cells left are scattered over the batches.
enum class Walk { Cells, Dealt };

/// Cell number `offset` of the cube within `ring` around `centre` (GridGeometry::ring_cell, same cells and keys),
/// and `lower`, a squared distance below that of every base point the grid put in the cell. `u` is the query in
/// cell units ((x - lo) / side). Along dimension j the cell's points lie at least max(c - u, u - c - 1) cells
/// away; a point's cell and u are each off by at most 2^-31 cells (grid_geometry.hpp), so 1e-5 cells less is a
/// lower bound whose rounding (relative 1e-15) stays far below the margin it leaves (>= 1e-10 / 200 relative).
template <int Dim>
__device__ bool cell_and_bound(const GridGeometry& g, const int64_t* centre, const double* u, int ring, int offset,
                               uint64_t& key, double& lower) {
  const int width = 2 * ring + 1;
  bool on_shell = ring == 1;
  key = 0;
  double sum = 0;
#pragma unroll
  for (int j = 0; j < Dim; ++j, offset /= width) {
    const int delta = offset % width - ring;
    on_shell = on_shell || delta == ring || delta == -ring;
    const int64_t c = centre[j] + delta;
    if (!g.inside(j, c)) return false;
    key += static_cast<uint64_t>(c) * g.stride[j];
    const double gap = fmax(double(c) - u[j], u[j] - double(c) - 1.0) - 1e-5;
    if (gap > 0) sum += gap * gap;
  }
  lower = sum * g.side * g.side;
  return on_shell;
}

/// The group's pruning bound: each of its t lanes holds at least ceil(k / t) candidates no farther than its entry
/// ceil(k / t) - 1, so the group holds k no farther than the largest of those, and the k-th nearest is not farther
/// (lists only improve). `keep` while a lane holds fewer. With t = 1 this is the query's current k-th distance.
__device__ double group_bound(const LaneList& mine, int n, int k, int t, unsigned mask, double keep) {
  const int need = (k + t - 1) / t;
  double b = n >= need ? mine.dist(need - 1) : keep;
  for (int offset = t / 2; offset > 0; offset /= 2) b = fmax(b, __shfl_xor_sync(mask, b, offset));
  return fmin(b, keep);
}

/// Dim: the dimension as a constant, so that the query, its cell and the distance loops live in registers. W: the
/// walk over a batch's points (Walk).
template <int Dim, Walk W>
__global__ void range_query_kernel(GridView grid, QueryBatch b) {
  extern __shared__ __align__(16) unsigned char shared_lists[];
  const int64_t thread = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t slot = thread / b.t;
  const int lane = static_cast<int>(thread % b.t);
  if (slot >= b.count) return;  // whole groups leave together: t divides the warp and the block
  const unsigned warp_lane = threadIdx.x & 31u;
  const unsigned mask = b.t == 32 ? 0xffffffffu : ((1u << b.t) - 1u) << (warp_lane & ~unsigned(b.t - 1));
  const GridGeometry& g = grid.g;
  const int64_t q = b.cell_ids ? int64_t(b.cell_ids[slot]) : b.query_ids[slot];
  double qv[Dim], u[Dim];
  int64_t centre[Dim];
#pragma unroll
  for (int j = 0; j < Dim; ++j) {
    qv[j] = b.queries[q * Dim + j];
    centre[j] = g.coord(j, b.queries[q * Dim + j]);
    u[j] = (qv[j] - g.lo[j]) / g.side;
  }
  const double keep = g.trusted_sq(b.rings);  // farther candidates can never be part of a certain answer
  const LaneList mine = lane_list(b, slot, lane, shared_lists);
  int n = 0;
  bool certain = false;
  for (int ring = 1; ring <= b.rings && !certain; ++ring) {
    const int64_t offsets = g.ring_offsets(ring);
    // The t lanes look up t cells at once (each a load from the dense table or a binary search), then read their
    // points together (W): one lookup per cell and group instead of one per lane.
    // Ring 1 goes nearest cells first, so that the bound tightens early; a cell entirely beyond the group's bound
    // is neither looked up nor read (at 6-D most of the 729 cells once the query's k nearest are roughly known).
    for (int64_t first = 0; first < offsets; first += b.t) {
      const double bound = group_bound(mine, n, b.k, b.t, mask, keep);
      int64_t my_start = 0, my_end = 0;
      uint64_t key = 0;
      double lower = 0;
      if (first + lane < offsets) {
        const int offset = ring == 1 ? int(grid.near_first[first + lane]) : int(first + lane);
        if (cell_and_bound<Dim>(g, centre, u, ring, offset, key, lower) && !(lower > bound))
          grid.range(key, my_start, my_end);
      }
      if constexpr (W == Walk::Dealt) {
        // The points of the t cells, numbered one after the other, are dealt to the lanes in turn: every lane busy
        // while the batch lasts (cell by cell, a cell of 12 points kept 4 of 8 lanes idle half the time). The
        // cells' first points and how many points come before each, per group in shared memory; `total` in all.
        __shared__ int64_t batch_first[kBlock], batch_before[kBlock];  // per lane: its cell of the group's batch
        int64_t before = my_end - my_start;
        for (int offset = 1; offset < b.t; offset *= 2) {
          const int64_t other = __shfl_up_sync(mask, before, offset, b.t);
          if (lane >= offset) before += other;
        }
        const int64_t total = __shfl_sync(mask, before, b.t - 1, b.t);
        before -= my_end - my_start;  // exclusive
        const int group = threadIdx.x - lane;
        batch_first[threadIdx.x] = my_start;
        batch_before[threadIdx.x] = before;
        __syncwarp(mask);
        int c = 0;  // the cell of the lane's next candidate (the numbering only grows)
        rank_points<Dim>(grid, b, qv, q, bound, mine, n, lane, total, [&](int64_t j) {
          while (c + 1 < b.t && batch_before[group + c + 1] <= j) ++c;
          return batch_first[group + c] + (j - batch_before[group + c]);
        });
        __syncwarp(mask);  // the group's next batch overwrites its cells
      } else {
        // Each of the t cells in turn, its points split over the lanes.
        for (int from = 0; from < b.t; ++from) {
          const int64_t start = __shfl_sync(mask, my_start, from, b.t), end = __shfl_sync(mask, my_end, from, b.t);
          rank_points<Dim>(grid, b, qv, q, bound, mine, n, lane, end - start, [start](int64_t j) { return start + j; });
        }
      }
    }
    // Certain when the group holds k candidates within this ring's trusted radius (every lane sees the same sum).
    const double bound = g.trusted_sq(ring);
    int within = 0;
    while (within < n && mine.dist(within) <= bound) ++within;
    certain = group_sum(within, b.t, mask) >= b.k;
  }
  *mine.n = n;
  __syncwarp(mask);  // the group's lists are visible to its lane 0
  if (lane != 0) return;
  const int64_t row = b.rows_by_query ? q - b.row_base : slot;
  b.ok[row] = certain ? 1 : 0;
  if (certain) {
    merge_lists(b, row, mine);
  } else {  // the host skips a failed row but downloads the chunk's rows in one copy: defined, not left unwritten
    for (int r = 0; r < b.k; ++r) {
      b.out_d[row * b.k + r] = 0.f;
      b.out_i[row * b.k + r] = ~0u;
    }
  }
}

using RangeQueryKernel = void (*)(GridView, QueryBatch);

/// The walk of every dimension: Dealt (H200 2026-11-27, bench/results/join_2026-11-27_h200.md: faster than Cells at 3-D
/// and 6-D once the first batch went unlisted; on the H100 of 2026-11-25 Cells was faster at 3-D before that).
/// GKNN_JOIN_WALK=cells or dealt takes one for every dimension, so one build can measure both (read once; any
/// other non-empty value is refused).
Walk chosen_walk() {
  static const int forced = [] {  // -1: none, else the Walk
    const char* v = std::getenv("GKNN_JOIN_WALK");
    const std::string_view value = v ? v : "";
    if (value.empty()) return -1;
    if (value == "cells") return int(Walk::Cells);
    if (value == "dealt") return int(Walk::Dealt);
    detail::fail(ErrorCode::InvalidArgument, "GKNN_JOIN_WALK must be cells or dealt (got '", value, "')");
  }();
  if (forced >= 0) return static_cast<Walk>(forced);
  return Walk::Dealt;
}

/// How a self-join's batch of every point is cut into chunks (GPU-only mode's first batch):
///   Cells: ranges of the grid's cell order; each chunk's rows land all over the result, scattered by the host
///     (before issue 14's query ranges: 130 ms of host scatter for 10^7 x 16 on the H100, for 50 ms of kernels).
///   Queries: ranges of query ids, each taken in the grid's cell order (one stable sort of the cell order by range,
///     order_by_range); the kernel writes a query's row at its id less the range's first, so a chunk comes down in
///     query order and the host copies it into the result contiguously, each thread its own rows and pages. A
///     block's queries are then a 1/ranges sample of the cell order, a few cells apart rather than in one cell,
///     and each chunk sweeps the whole grid: more L2 traffic, to be measured against the scatter it saves.
/// GKNN_JOIN_ROWS=cells or queries takes one (read once; any other non-empty value is refused). Default: queries.
enum class Rows { Cells, Queries };

Rows chosen_rows() {
  static const Rows rows = [] {
    const char* v = std::getenv("GKNN_JOIN_ROWS");
    const std::string_view value = v ? v : "";
    if (value.empty() || value == "queries") return Rows::Queries;
    if (value == "cells") return Rows::Cells;
    detail::fail(ErrorCode::InvalidArgument, "GKNN_JOIN_ROWS must be cells or queries (got '", value, "')");
  }();
  return rows;
}

/// The kernel instance of a dimension 1..kGridMaxDim and a walk.
RangeQueryKernel range_query_kernel_for(int dim, Walk walk) {
  static constexpr RangeQueryKernel cells[kGridMaxDim] = {
      range_query_kernel<1, Walk::Cells>, range_query_kernel<2, Walk::Cells>, range_query_kernel<3, Walk::Cells>,
      range_query_kernel<4, Walk::Cells>, range_query_kernel<5, Walk::Cells>, range_query_kernel<6, Walk::Cells>,
      range_query_kernel<7, Walk::Cells>, range_query_kernel<8, Walk::Cells>};
  static constexpr RangeQueryKernel dealt[kGridMaxDim] = {
      range_query_kernel<1, Walk::Dealt>, range_query_kernel<2, Walk::Dealt>, range_query_kernel<3, Walk::Dealt>,
      range_query_kernel<4, Walk::Dealt>, range_query_kernel<5, Walk::Dealt>, range_query_kernel<6, Walk::Dealt>,
      range_query_kernel<7, Walk::Dealt>, range_query_kernel<8, Walk::Dealt>};
  GKNN_EXPECT(dim >= 1 && dim <= kGridMaxDim, ErrorCode::Internal, "join grid of dimension ", dim);
  return (walk == Walk::Cells ? cells : dealt)[dim - 1];
}

/// Threads per block and dynamic shared memory of a launch: the largest block (256 down to 32 threads) whose lists
/// fit about 100 KB (two blocks per SM), else 32 threads up to the device's opt-in limit; 0 bytes: global lists.
struct LaunchShape {
  int threads = 256;
  size_t shared_bytes = 0;
};

LaunchShape launch_shape(int64_t k, int device) {
  const size_t per_thread = size_t(k) * (sizeof(double) + sizeof(uint32_t)) + sizeof(int);
  int optin = 0;
  GKNN_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const size_t limit = std::min<size_t>(size_t(optin), size_t(200) << 10);
  LaunchShape shape;
  while (shape.threads > 32 && shape.threads * per_thread > (size_t(100) << 10)) shape.threads /= 2;
  if (shape.threads * per_thread > limit) return LaunchShape{};  // global lists, 256 threads
  shape.shared_bytes = shape.threads * per_thread;
  return shape;
}

/// The 3^dim offsets of ring 1 (ring_cell's numbering: base-3 digits, delta = digit - 1) ordered by their number of
/// non-zero deltas, then by offset: the query's own cell, then the cells sharing a face with it, and so on.
std::vector<uint16_t> nearest_first_order(int dim) {
  int count = 1;
  for (int j = 0; j < dim; ++j) count *= 3;
  std::vector<uint16_t> order(static_cast<size_t>(count));
  std::vector<int> nonzero(static_cast<size_t>(count), 0);
  for (int o = 0; o < count; ++o) {
    order[size_t(o)] = static_cast<uint16_t>(o);
    for (int j = 0, rest = o; j < dim; ++j, rest /= 3) nonzero[size_t(o)] += rest % 3 != 1;
  }
  std::stable_sort(order.begin(), order.end(), [&](uint16_t a, uint16_t b) { return nonzero[a] < nonzero[b]; });
  return order;
}

/// Epsilon's histogram (epsilon.hpp): the sampled rows' distances to every base row, counted per block in shared
/// memory (the sampled rows, their ids, then one 32-bit count per bin; a block counts at most 2^31 pairs) and
/// added to `counts`. Float arithmetic like the CPU's count: epsilon only sizes the cells, it ranks nothing.
template <int Dim>
__global__ void sample_histogram_kernel(const float* base, int64_t n, const int64_t* rows, int m, Binning binning,
                                        unsigned long long* counts) {
  extern __shared__ __align__(16) unsigned char shared[];
  int64_t* ids = reinterpret_cast<int64_t*>(shared);
  float* samples = reinterpret_cast<float*>(ids + m);
  unsigned* bins = reinterpret_cast<unsigned*>(samples + int64_t(m) * Dim);
  for (int i = threadIdx.x; i < m; i += blockDim.x) ids[i] = rows[i];
  for (int i = threadIdx.x; i < m * Dim; i += blockDim.x) samples[i] = base[rows[i / Dim] * Dim + i % Dim];
  for (int i = threadIdx.x; i < binning.bins; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < n; p += int64_t(gridDim.x) * blockDim.x) {
    float x[Dim];
#pragma unroll
    for (int j = 0; j < Dim; ++j) x[j] = base[p * Dim + j];
    for (int s = 0; s < m; ++s) {
      float d2 = 0;
#pragma unroll
      for (int j = 0; j < Dim; ++j) {
        const float d = x[j] - samples[s * Dim + j];
        d2 += d * d;
      }
      if (!(d2 < binning.limit_sq) || ids[s] == p) continue;
      const int bin = static_cast<int>(sqrtf(d2) * binning.bins_per_unit);
      if (bin < binning.bins) atomicAdd(&bins[bin], 1u);
      else if (binning.clamp_last) atomicAdd(&bins[binning.bins - 1], 1u);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < binning.bins; i += blockDim.x)
    if (bins[i]) atomicAdd(&counts[i], static_cast<unsigned long long>(bins[i]));
}

using SampleHistogramKernel = void (*)(const float*, int64_t, const int64_t*, int, Binning, unsigned long long*);

SampleHistogramKernel sample_histogram_kernel_for(int dim) {
  static constexpr SampleHistogramKernel kernels[kGridMaxDim] = {
      sample_histogram_kernel<1>, sample_histogram_kernel<2>, sample_histogram_kernel<3>, sample_histogram_kernel<4>,
      sample_histogram_kernel<5>, sample_histogram_kernel<6>, sample_histogram_kernel<7>, sample_histogram_kernel<8>};
  GKNN_EXPECT(dim >= 1 && dim <= kGridMaxDim, ErrorCode::Internal, "join histogram of dimension ", dim);
  return kernels[dim - 1];
}

/// Cells of the whole grid, empty ones included (below 2^62: make_geometry bounds every dimension).
uint64_t total_cells(const GridGeometry& g) {
  uint64_t cells = 1;
  for (int j = 0; j < g.dim; ++j) cells *= static_cast<uint64_t>(g.cells[j]);
  return cells;
}

int key_bits(const GridGeometry& g) {
  const uint64_t cells = total_cells(g);
  int bits = 1;
  while (bits < 64 && (uint64_t(1) << bits) < cells) ++bits;
  return bits;
}

class CudaSearcher final : public GridSearcher {
 public:
  CudaSearcher(const Problem& problem, const Output& output, int device, int threads_per_query, int rings)
      : problem_(problem), output_(output), device_(use_device(device)), t_(threads_per_query), rings_(rings) {
    GKNN_EXPECT(problem.base.rows < (int64_t(1) << 32), ErrorCode::Unsupported,
                "knn_join: the GPU grid indexes at most 2^32 - 1 points (got ", problem.base.rows, ")");
    upload(problem.base, base_);
    if (!problem.self) upload(problem.queries, queries_);
    const std::vector<uint16_t> order = nearest_first_order(int(problem.dim()));
    near_first_.resize(order.size());
    GKNN_CUDA_TRY(cudaMemcpyAsync(near_first_.data(), order.data(), order.size() * sizeof(uint16_t),
                                  cudaMemcpyHostToDevice, stream_.get()));
    reserve_buffers();
    // The copies above are on stream_, like every kernel that reads them; the sync is for the host memory they
    // read: the caller's rows, which it may change once knn_join has returned, and the local order table.
    stream_.sync();
  }

  /// No copy may be left in flight into the pinned blocks, which go back to PinnedPool for another join (a search
  /// that threw may have left one).
  ~CudaSearcher() override {
    GKNN_CUDA_TRY_NOTHROW(cudaSetDevice(device_));
    GKNN_CUDA_TRY_NOTHROW(cudaStreamSynchronize(stream_.get()));
    GKNN_CUDA_TRY_NOTHROW(cudaStreamSynchronize(copies_.get()));
  }

  void build(const GridGeometry& geometry) override {
    GKNN_CUDA_TRY(cudaSetDevice(device_));
    geometry_ = geometry;
    const int64_t n = problem_.base.rows;
    cudaStream_t s = stream_.get();
    // Every buffer is sized before the first launch: a resize that frees memory an enqueued launch still uses
    // would rely on cudaFree waiting for the non-blocking stream. The constructor sized them all already
    // (reserve_buffers): these resizes allocate nothing, unless a dense table outgrows its reservation.
    const auto allocation = Clock::now();
    size_grid_buffers(n);
    const int bits = key_bits(geometry);
    temp_.resize(build_temp_bytes(n, bits));
    stages_.index_alloc_ms += ms_since(allocation);
    uint64_t* keys = build_keys_.data();
    uint64_t* sorted_keys = build_sorted_keys_.data();
    uint32_t* ids = build_ids_.data();
    int64_t* counts = build_counts_.data();
    size_t sort_bytes = 0, encode_bytes = 0;
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys, sorted_keys, ids, ids_.data(), n, 0,
                                                  bits, s));
    GKNN_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(nullptr, encode_bytes, sorted_keys, cell_keys_.data(), counts,
                                                     runs_.data(), n, s));
    cell_keys_kernel<<<unsigned((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(base_.data(), n, geometry, keys, ids);
    GKNN_CUDA_CHECK_LAUNCH();
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp_.data(), sort_bytes, keys, sorted_keys, ids, ids_.data(), n,
                                                  0, bits, s));
    gather_kernel<<<unsigned((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(base_.data(), n, int(problem_.dim()),
                                                                          ids_.data(), sorted_points_.data());
    GKNN_CUDA_CHECK_LAUNCH();
    GKNN_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(temp_.data(), encode_bytes, sorted_keys, cell_keys_.data(),
                                                     counts, runs_.data(), n, s));
    int64_t cells = 0;
    GKNN_CUDA_TRY(cudaMemcpyAsync(&cells, runs_.data(), sizeof(int64_t), cudaMemcpyDeviceToHost, s));
    stream_.sync();  // nothing in flight: the buffers below may be reallocated
    cells_ = cells;
    // starts[0] = 0, starts[c + 1] = counts[0] + ... + counts[c].
    auto resizing = Clock::now();
    starts_.resize(size_t(cells + 1));
    size_t scan_bytes = 0;
    GKNN_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, counts, starts_.data() + 1, cells, s));
    temp_.resize(scan_bytes);
    stages_.index_alloc_ms += ms_since(resizing);
    GKNN_CUDA_TRY(cudaMemsetAsync(starts_.data(), 0, sizeof(int64_t), s));
    GKNN_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp_.data(), scan_bytes, counts, starts_.data() + 1, cells, s));
    // A dense key -> start table when the grid has at most max(4n, 2^20) cells in all, and at most 2^28 (2 GiB of
    // table; uniform sets have about n / k cells), so that the kernel's cell lookups are one load; sparse grids
    // (an exponential set's bounding box) keep the binary search over the non-empty cells.
    const uint64_t total = total_cells(geometry);
    if (total <= std::min<uint64_t>(std::max<uint64_t>(4 * uint64_t(n), uint64_t(1) << 20), uint64_t(1) << 28)) {
      resizing = Clock::now();
      dense_.resize(size_t(total + 1));
      stages_.index_alloc_ms += ms_since(resizing);
      dense_starts_kernel<<<unsigned((total + kBlock) / kBlock), kBlock, 0, s>>>(cell_keys_.data(), cells,
                                                                                starts_.data(), total, dense_.data());
      GKNN_CUDA_CHECK_LAUNCH();
    } else {
      dense_.resize(0);
    }
    stream_.sync();
  }

  bool counts_histograms() const override { return true; }

  GpuStages stages() const override { return stages_; }

  std::vector<double> sample_histogram(const std::vector<int64_t>& rows, const Binning& binning) override {
    GKNN_CUDA_TRY(cudaSetDevice(device_));
    const int64_t n = problem_.base.rows;
    const int m = static_cast<int>(rows.size());
    const int dim = static_cast<int>(problem_.dim());
    std::vector<double> out(size_t(std::max(binning.bins, 0)), 0.0);
    if (m == 0 || n == 0 || binning.bins <= 0) return out;
    const size_t shared = size_t(m) * (sizeof(int64_t) + dim * sizeof(float)) + size_t(binning.bins) * sizeof(unsigned);
    int optin = 0, sms = 0;
    GKNN_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
    GKNN_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    GKNN_EXPECT(shared <= size_t(optin), ErrorCode::Internal, "join epsilon: ", m, " sampled rows and ", binning.bins,
                " bins need ", shared, " bytes of shared memory (", optin, " per block)");
    const SampleHistogramKernel kernel = sample_histogram_kernel_for(dim);
    if (shared > (size_t(48) << 10))
      GKNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    // Few blocks (each adds its bins once), but enough that no block counts 2^31 pairs.
    const int64_t per_block = std::max<int64_t>(1, (int64_t(1) << 31) / m);
    const int64_t blocks = std::max<int64_t>(int64_t(sms) * 2, (n + per_block - 1) / per_block);
    cudaStream_t s = stream_.get();
    hist_rows_.resize(size_t(m));  // reserved by the constructor for the usual sample and bins: no allocation
    hist_counts_.resize(size_t(binning.bins));
    std::vector<unsigned long long> host(size_t(binning.bins));
    GKNN_CUDA_TRY(cudaMemcpyAsync(hist_rows_.data(), rows.data(), size_t(m) * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    GKNN_CUDA_TRY(cudaMemsetAsync(hist_counts_.data(), 0, hist_counts_.bytes(), s));
    kernel<<<unsigned(blocks), kBlock, shared, s>>>(base_.data(), n, hist_rows_.data(), m, binning, hist_counts_.data());
    GKNN_CUDA_CHECK_LAUNCH();
    GKNN_CUDA_TRY(cudaMemcpyAsync(host.data(), hist_counts_.data(), hist_counts_.bytes(), cudaMemcpyDeviceToHost, s));
    stream_.sync();
    for (size_t b = 0; b < host.size(); ++b) out[b] = static_cast<double>(host[b]);
    return out;
  }

  /// The ids in chunks of at most kChunkQueries (and kChunkBytes of results), two in flight: while the device
  /// computes chunk c, the host writes chunk c - 1 from its pinned copy into the result.
  std::vector<int64_t> search(const std::vector<int64_t>& ids) override {
    GKNN_CUDA_TRY(cudaSetDevice(device_));
    // A batch of every point of a self-join runs in the grid's cell order: the queries of a block then share
    // their cells, so their lookups and candidates come from the caches rather than from all over the base (the
    // queue's order is random in space).
    if (problem_.self && ids.size() == size_t(problem_.base.rows)) return search_chunks(nullptr, problem_.base.rows);
    return search_chunks(ids.data(), static_cast<int64_t>(ids.size()));
  }

  /// GPU-only mode's first batch. A self-join's runs in the grid's cell order, its query ids read by the kernel
  /// from ids_ (or by_range_) and never listed on the host (at 10^7 points the queue's identity list, its copy, and
  /// the whole cell order downloaded and widened to 64 bits: 80 + 80 + 40 + 80 MB).
  std::vector<int64_t> search_all() override {
    GKNN_CUDA_TRY(cudaSetDevice(device_));
    if (problem_.self) return search_chunks(nullptr, problem_.base.rows);
    std::vector<int64_t> ids(size_t(problem_.queries.rows));
    std::iota(ids.begin(), ids.end(), 0);
    return search_chunks(ids.data(), static_cast<int64_t>(ids.size()));
  }

 private:
  /// Queries ids[0, total), or, with ids null (a self-join's batch of every point), every base id in the grid's
  /// cell order: chunks of ids_ (Rows::Cells) or query ranges each in cell order (Rows::Queries, by_range_).
  std::vector<int64_t> search_chunks(const int64_t* ids, int64_t total) {
    const int dim = int(problem_.dim());
    const RangeQueryKernel kernel = range_query_kernel_for(dim, chosen_walk());
    if (shape_.shared_bytes > (size_t(48) << 10))
      GKNN_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shape_.shared_bytes)));
    const int64_t chunk = chunk_;
    std::vector<int64_t> failed;
    if (total == 0) return failed;
    // Both chunks' buffers before the first launch, timed apart (gpu_setup_ms). The constructor sized them for the
    // largest batch already (reserve_buffers), so nothing is allocated here; with query ranges also the sort of
    // the cell order into them (a pass of radix sort over the ids, on the device).
    const auto setup = Clock::now();
    for (int64_t c = 0; c < std::min<int64_t>(2, (total + chunk - 1) / chunk); ++c)
      reserve(chunks_[c], std::min(chunk, total));
    const bool by_query = ids == nullptr && chosen_rows() == Rows::Queries;
    if (by_query) order_by_range(chunk);
    stages_.setup_ms += ms_since(setup);
    bool pending = false;  // the previous chunk's results are still on their way
    for (int64_t first = 0, c = 0; first < total; first += chunk, ++c) {
      const int64_t count = std::min(chunk, total - first);
      enqueue(chunks_[c % 2], ids ? ids + first : nullptr, by_query, first, count, kernel);
      if (pending) finish(chunks_[(c + 1) % 2], failed);
      pending = true;
    }
    if (pending) finish(chunks_[(total - 1) / chunk % 2], failed);
    return failed;
  }

  /// by_range_: the grid's cell order (ids_) sorted stably by query range (id / range), so that range r's ids lie at
  /// [r * range, r * range + its size), in cell order (every base id is a query of a self-join's full batch, once).
  /// The keys go through the build's key buffers, unused between builds (n 64-bit keys hold 2n 32-bit ones).
  void order_by_range(int64_t range) {
    const int64_t n = problem_.base.rows;
    cudaStream_t s = stream_.get();
    uint32_t* keys = reinterpret_cast<uint32_t*>(build_keys_.data());
    uint32_t* sorted_keys = reinterpret_cast<uint32_t*>(build_sorted_keys_.data());
    const int64_t ranges = (n + range - 1) / range;
    int bits = 1;
    while (bits < 32 && (int64_t(1) << bits) < ranges) ++bits;
    by_range_.resize(size_t(n));
    size_t bytes = 0;
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, sorted_keys, ids_.data(), by_range_.data(), n,
                                                  0, bits, s));
    temp_.resize(bytes);  // reserved (nothing in flight uses temp_ here: build synchronised)
    range_keys_kernel<<<unsigned((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(ids_.data(), n, uint32_t(range), keys);
    GKNN_CUDA_CHECK_LAUNCH();
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp_.data(), bytes, keys, sorted_keys, ids_.data(),
                                                  by_range_.data(), n, 0, bits, s));
  }

  /// Temporary bytes of the grid build's CUB calls for n points and `bits` key bits (the scan's over at most n
  /// cells is sized apart, after the run-length encoding).
  size_t build_temp_bytes(int64_t n, int bits) const {
    cudaStream_t s = stream_.get();
    size_t sort_bytes = 0, encode_bytes = 0;
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, build_keys_.data(), build_sorted_keys_.data(),
                                                  build_ids_.data(), ids_.data(), n, 0, bits, s));
    GKNN_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(nullptr, encode_bytes, build_sorted_keys_.data(),
                                                     cell_keys_.data(), build_counts_.data(), runs_.data(), n, s));
    return std::max(sort_bytes, encode_bytes);
  }

  /// The grid's arrays and its build's keys for n points (CUB's temporaries are sized apart).
  void size_grid_buffers(int64_t n) {
    build_keys_.resize(size_t(n));
    build_sorted_keys_.resize(size_t(n));
    build_ids_.resize(size_t(n));
    build_counts_.resize(size_t(n));
    runs_.resize(1);
    ids_.resize(size_t(n));
    sorted_points_.resize(size_t(n * problem_.dim()));
    cell_keys_.resize(size_t(n));
  }

  /// Every buffer the GPU side needs for the usual join, sized before knn_join starts the result's page population
  /// (it does so once this searcher exists): cudaMalloc, cudaFree and cudaMallocHost map or unmap memory, so they
  /// wait for the process's mmap lock, which the population's page faults take (read) slice after slice. Beside
  /// the population the grid build's buffers took 58 ms and the chunks' pinned ones 73 ms of a 10^7 x 16 join
  /// (H100, issue 14), the build's frees more. So the grid's arrays and its build's temporaries (kept across
  /// builds: a re-index allocates nothing), the CUB temporaries at their largest (64 key bits, n cells), the
  /// dense table for up to n cells, epsilon's histogram and both chunks are made here, once the base is up; a
  /// larger dense table or histogram later grows its buffer then. The device holds about 40 bytes a point more
  /// between builds than when the build's temporaries were freed (n = 10^7: 0.4 GB).
  void reserve_buffers() {
    const int64_t n = problem_.base.rows;
    size_grid_buffers(n);
    starts_.resize(size_t(n + 1));
    dense_.resize(size_t(n + 1));  // a uniform set's grid has fewer cells than points
    if (problem_.self) by_range_.resize(size_t(n));
    size_t bytes = build_temp_bytes(n, 64), scan_bytes = 0, range_bytes = 0;
    cudaStream_t s = stream_.get();
    GKNN_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, build_counts_.data(), starts_.data() + 1, n, s));
    if (problem_.self) {
      uint32_t* keys = reinterpret_cast<uint32_t*>(build_keys_.data());
      GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, range_bytes, keys, keys, ids_.data(), by_range_.data(), n,
                                                    0, 32, s));
    }
    temp_.resize(std::max({bytes, scan_bytes, range_bytes}));
    hist_rows_.resize(512);       // epsilon.cpp samples 500 rows
    hist_counts_.resize(10000);   // and bins 10 000 (select_epsilon's default)
    shape_ = launch_shape(problem_.k, device_);
    const size_t lane_list = size_t(problem_.k) * (sizeof(double) + sizeof(uint32_t)) + sizeof(int);
    const size_t global_lists = shape_.shared_bytes ? 0 : size_t(t_) * lane_list;
    const size_t per_query =
        size_t(problem_.k) * (sizeof(float) + sizeof(uint32_t)) + sizeof(int64_t) + 1 + global_lists;
    chunk_ = std::clamp<int64_t>(int64_t(kChunkBytes / per_query), 1, kChunkQueries);
    const int64_t largest = std::min(chunk_, problem_.queries.rows);  // no batch holds more queries
    for (int64_t c = 0; c < std::min<int64_t>(2, (problem_.queries.rows + chunk_ - 1) / chunk_); ++c)
      reserve(chunks_[c], largest);
  }

  /// Makes `device` current before the members that allocate on it (the stream) are constructed.
  static int use_device(int device) {
    GKNN_CUDA_TRY(cudaSetDevice(device));
    return device;
  }

  /// On stream_, never with the blocking cudaMemcpy2D: stream_ is non-blocking, so it does not wait for the legacy
  /// default stream, and a blocking copy from pageable memory returns once the rows are staged, before their DMA
  /// has landed. The grid build's key kernel then read a stale tail of the base (intermittent wrong cells, issue 14).
  /// Through two pinned slots of 32 MB (staging.cuh: the host team packs a chunk while the previous one copies),
  /// not as one pageable copy: that took 2.4 s for 10^7 x 6 rows on the H100 (2026-11-24), beside the result's
  /// page population on another thread. The slots are kept for the next join (StagingCache), given back once
  /// the copies are done (also when one throws).
  void upload(FloatView m, DeviceBuffer<float>& out) {
    out.resize(size_t(m.rows * m.cols));
    if (m.rows == 0) return;
    const int64_t chunk = std::min(m.rows, std::max<int64_t>(1, (int64_t(32) << 20) / (m.cols * 4)));
    struct Kept {
      int device;
      cudaStream_t stream;
      std::unique_ptr<StagingCache::Slots> slots;
      ~Kept() {
        if (cudaStreamSynchronize(stream) == cudaSuccess) StagingCache::give(device, std::move(slots));
      }
    } kept{device_, stream_.get(), StagingCache::take(device_)};
    Stager<float> stager(m.data, m.row_stride(), m.cols, chunk, stream_.get(), nullptr, kept.slots.get());
    for (int64_t r0 = 0; r0 < m.rows; r0 += chunk) {
      stager.upload_into(out.data() + r0 * m.cols, r0, std::min(chunk, m.rows - r0), stream_.get());
      stager.release(stream_.get());
    }
    stream_.sync();
  }

  /// The buffers of one chunk in flight: its query ids, the lanes' global lists (when they do not fit shared
  /// memory), its results on the device and their pinned copies.
  struct Chunk {
    int64_t first = 0;  ///< its first query (by_query) or its first position in the batch
    int64_t count = 0;
    bool in_cell_order = false;  ///< its queries are ids_[first, first + count): host_cell_ids holds them
    bool by_query = false;       ///< its queries are the ids [first, first + count), rows in query order
    DeviceBuffer<int64_t> query_ids;
    DeviceBuffer<double> list_d;
    DeviceBuffer<uint32_t> list_i;
    DeviceBuffer<int> list_n;
    DeviceBuffer<float> out_d;
    DeviceBuffer<uint32_t> out_i;
    DeviceBuffer<unsigned char> ok;
    PooledPinned<int64_t> host_ids;  // kept for the next join (PinnedPool)
    PooledPinned<uint32_t> host_cell_ids;
    PooledPinned<float> host_d;
    PooledPinned<uint32_t> host_i;
    PooledPinned<unsigned char> host_ok;
    Event launched;  ///< before its kernel (on stream_), timed: gpu_kernel_ms
    Event computed;  ///< its kernel ran (on stream_)
    Event done{cudaEventDisableTiming};  ///< its rows are in the pinned buffers (on copies_)
  };

  /// Sizes c's buffers for chunks of up to `count` queries.
  void reserve(Chunk& c, int64_t count) {
    const int64_t k = problem_.k;
    c.query_ids.resize(size_t(count));
    if (!shape_.shared_bytes) {
      c.list_d.resize(size_t(count * t_ * k));
      c.list_i.resize(size_t(count * t_ * k));
      c.list_n.resize(size_t(count * t_));
    }
    c.out_d.resize(size_t(count * k));
    c.out_i.resize(size_t(count * k));
    c.ok.resize(size_t(count));
    if (c.host_ok.size() < size_t(count)) {  // page-locked, so the copies run at full bandwidth and asynchronously
      c.host_ids = PooledPinned<int64_t>(size_t(count));
      c.host_cell_ids = PooledPinned<uint32_t>(size_t(count));
      c.host_d = PooledPinned<float>(size_t(count * k));
      c.host_i = PooledPinned<uint32_t>(size_t(count * k));
      c.host_ok = PooledPinned<unsigned char>(size_t(count));
    }
  }

  /// Uploads `count` query ids (ids null: the kernel reads ids_[first, first + count), downloaded with the rows,
  /// or with by_query by_range_[first, first + count), the ids [first, first + count)), launches their range
  /// queries and the download of their rows into `c`'s pinned buffers; returns at once. `c` is free: its previous
  /// chunk was finished.
  void enqueue(Chunk& c, const int64_t* ids, bool by_query, int64_t first, int64_t count, RangeQueryKernel kernel) {
    const int64_t k = problem_.k;
    cudaStream_t s = stream_.get();
    c.first = first;
    c.count = count;
    c.by_query = ids == nullptr && by_query;
    c.in_cell_order = ids == nullptr && !by_query;
    reserve(c, count);  // sized by the constructor already: nothing allocated here
    const uint32_t* cell_ids = ids ? nullptr : (c.by_query ? by_range_.data() : ids_.data()) + first;
    if (ids) {  // the host copy stays for finish(): the scatter reads its query ids from it
      std::memcpy(c.host_ids.data(), ids, size_t(count) * sizeof(int64_t));
      GKNN_CUDA_TRY(cudaMemcpyAsync(c.query_ids.data(), c.host_ids.data(), size_t(count) * sizeof(int64_t),
                                    cudaMemcpyHostToDevice, s));
    }
    const GridView grid{geometry_, cell_keys_.data(), starts_.data(), ids_.data(), sorted_points_.data(), cells_,
                        dense_.size() ? dense_.data() : nullptr, near_first_.data()};
    QueryBatch batch{problem_.self ? base_.data() : queries_.data(), c.query_ids.data(), cell_ids, count, int(k),
                     t_, rings_, problem_.self, problem_.metric == Metric::L2, shape_.shared_bytes > 0,
                     c.list_d.data(), c.list_i.data(), c.list_n.data(), c.out_d.data(), c.out_i.data(),
                     c.ok.data()};
    batch.row_base = first;
    batch.rows_by_query = c.by_query;
    const int64_t threads = count * t_;
    c.launched.record(s);
    kernel<<<unsigned((threads + shape_.threads - 1) / shape_.threads), shape_.threads, shape_.shared_bytes, s>>>(
        grid, batch);
    GKNN_CUDA_CHECK_LAUNCH();
    // The rows go down on copies_, so that the next chunk's kernel runs during the download (one stream ran them
    // in turn: 10^7 x 16 rows are 1.9 GB, tens of ms of a kernel-idle device). The next use of c's buffers, device
    // or pinned, comes after finish(c) waited for `done`, which follows both the kernel and the copies.
    c.computed.record(s);
    cudaStream_t down = copies_.get();
    GKNN_CUDA_TRY(cudaStreamWaitEvent(down, c.computed.get(), 0));
    const size_t entries = size_t(count * k);
    GKNN_CUDA_TRY(cudaMemcpyAsync(c.host_d.data(), c.out_d.data(), entries * sizeof(float), cudaMemcpyDeviceToHost,
                                  down));
    GKNN_CUDA_TRY(cudaMemcpyAsync(c.host_i.data(), c.out_i.data(), entries * sizeof(uint32_t),
                                  cudaMemcpyDeviceToHost, down));
    GKNN_CUDA_TRY(cudaMemcpyAsync(c.host_ok.data(), c.ok.data(), size_t(count), cudaMemcpyDeviceToHost, down));
    if (c.in_cell_order)
      GKNN_CUDA_TRY(cudaMemcpyAsync(c.host_cell_ids.data(), cell_ids, size_t(count) * sizeof(uint32_t),
                                    cudaMemcpyDeviceToHost, down));
    c.done.record(down);
  }

  /// Waits for chunk `c` and writes its certain rows (query ids in c.host_ids, or c.host_cell_ids in cell order,
  /// or the range [c.first, c.first + c.count) in query order); the failed ids are appended in order. Each step
  /// timed apart (GpuStages).
  void finish(Chunk& c, std::vector<int64_t>& failed) {
    auto step = Clock::now();
    GKNN_CUDA_TRY(cudaEventSynchronize(c.done.get()));
    stages_.wait_ms += ms_since(step);
    stages_.kernel_ms += c.computed.since(c.launched);
    step = Clock::now();
    output_.wait_ready();
    stages_.result_wait_ms += ms_since(step);
    step = Clock::now();
    if (c.by_query)
      output_.copy_rows(problem_.k, c.first, c.count, c.host_d.data(), c.host_i.data(), c.host_ok.data(), failed);
    else
      output_.scatter(problem_.k, c.in_cell_order ? nullptr : c.host_ids.data(), c.host_cell_ids.data(), c.count,
                      c.host_d.data(), c.host_i.data(), c.host_ok.data(), failed);
    stages_.scatter_ms += ms_since(step);
  }

  Problem problem_;
  Output output_;
  int device_;  // before stream_: the stream is created on this device
  int t_;
  int rings_;
  Stream stream_;
  Stream copies_;  ///< the chunks' downloads, beside the next chunk's kernel on stream_
  GridGeometry geometry_;
  DeviceBuffer<float> base_, queries_, sorted_points_;
  DeviceBuffer<uint64_t> cell_keys_;
  DeviceBuffer<int64_t> starts_;
  DeviceBuffer<int64_t> dense_;  ///< GridView::dense (size 0: none)
  DeviceBuffer<uint32_t> ids_;
  DeviceBuffer<uint32_t> by_range_;  ///< ids_ sorted stably into query ranges (order_by_range; self-joins)
  DeviceBuffer<uint16_t> near_first_;  ///< GridView::near_first
  DeviceBuffer<unsigned char> temp_;
  // The grid build's temporaries, kept (reserve_buffers): the cell key of every point, sorted, the ids to sort
  // with them, the cells' counts and how many cells there are.
  DeviceBuffer<uint64_t> build_keys_, build_sorted_keys_;
  DeviceBuffer<uint32_t> build_ids_;
  DeviceBuffer<int64_t> build_counts_;
  DeviceBuffer<int64_t> runs_;
  DeviceBuffer<int64_t> hist_rows_;  ///< epsilon's sampled rows (sample_histogram)
  DeviceBuffer<unsigned long long> hist_counts_;
  int64_t cells_ = 0;
  LaunchShape shape_;
  int64_t chunk_ = 1;  ///< queries per chunk (kChunkQueries, fewer where kChunkBytes of results is less)
  std::array<Chunk, 2> chunks_;
  GpuStages stages_;
};

}  // namespace

std::unique_ptr<GridSearcher> make_cuda_searcher(const Problem& problem, const Output& output, int device,
                                                 int threads_per_query, int rings) {
  return std::make_unique<CudaSearcher>(problem, output, device, threads_per_query, rings);
}

}  // namespace gknn::detail::join
