// cuda_grid.cu: the GPU side of the join: the grid index built on the device (keys of every point, CUB radix sort,
// run-length encoding of the non-empty cells, a scan for their starts), and the batched range-query kernel of the
// seed: t threads per query split every adjacent cell's points, each keeps its own exact top-k, and the first
// thread of the group merges them. A query is answered only when it is certain (grid_geometry.hpp); otherwise it
// fails and goes back to the work queue. With rings > 1 (beyond the seed) a query that is not yet certain grows
// outward ring by ring inside the kernel before it fails.
#include <algorithm>
#include <limits>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/common/buffer.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/error.cuh"
#include "gknn/error.hpp"
#include "join/grid_searcher.hpp"

namespace gknn::detail::join {
namespace {

using detail::cuda::DeviceBuffer;
using detail::cuda::PinnedBuffer;
using detail::cuda::Stream;

constexpr int kBlock = 256;
constexpr size_t kScratchBudget = size_t(1) << 30;  // bytes of per-thread top-k lists per launch

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

/// The exact float64 squared distance of the library's oracle (exact_key): one subtraction, one product, one sum
/// per coordinate, in order, each rounded on its own (no fused multiply-add), so GPU and CPU rank identically.
__device__ double exact_squared(const double* q, const float* x, int dim) {
  double acc = 0;
  for (int j = 0; j < dim; ++j) {
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
};

struct QueryBatch {
  const float* queries;
  const int64_t* query_ids;
  int64_t count;
  int k;
  int t;
  int rings;
  bool self;
  bool l2;
  double* list_d;   ///< count * t lists of k
  int64_t* list_i;
  int* list_n;      ///< count * t
  float* out_d;     ///< count * k
  int64_t* out_i;
  unsigned char* ok;
};

/// Inserts (d, id) into a sorted list of at most k entries (held n), keeping the k first in the total order.
__device__ void insert_sorted(double* ld, int64_t* li, int& n, int k, double d, int64_t id) {
  if (n == k && !before(d, id, ld[k - 1], li[k - 1])) return;
  int pos = n < k ? n++ : k - 1;
  while (pos > 0 && before(d, id, ld[pos - 1], li[pos - 1])) {
    ld[pos] = ld[pos - 1];
    li[pos] = li[pos - 1];
    --pos;
  }
  ld[pos] = d;
  li[pos] = id;
}

/// Lane 0 of a certain query's group: the k first of the t sorted lists.
__device__ void merge_lists(const QueryBatch& b, int64_t slot) {
  const int t = b.t, k = b.k;
  const double* ld = b.list_d + slot * t * k;
  const int64_t* li = b.list_i + slot * t * k;
  const int* ln = b.list_n + slot * t;
  int head[32];
  for (int l = 0; l < t; ++l) head[l] = 0;
  for (int r = 0; r < k; ++r) {
    int best = -1;
    for (int l = 0; l < t; ++l) {
      if (head[l] == ln[l]) continue;
      const int64_t a = int64_t(l) * k + head[l];
      if (best < 0) {
        best = l;
        continue;
      }
      const int64_t c = int64_t(best) * k + head[best];
      if (before(ld[a], li[a], ld[c], li[c])) best = l;
    }
    const int64_t e = int64_t(best) * k + head[best]++;
    b.out_d[slot * k + r] = static_cast<float>(b.l2 ? sqrt(ld[e]) : ld[e]);
    b.out_i[slot * k + r] = li[e];
  }
}

/// Sum of v over the t lanes of this lane's group (t divides 32; groups are aligned within the warp).
__device__ int group_sum(int v, int t, unsigned mask) {
  for (int offset = t / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset);
  return v;
}

__global__ void range_query_kernel(GridView grid, QueryBatch b) {
  const int64_t thread = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t slot = thread / b.t;
  const int lane = static_cast<int>(thread % b.t);
  if (slot >= b.count) return;  // whole groups leave together: t divides the warp and the block
  const unsigned warp_lane = threadIdx.x & 31u;
  const unsigned mask = b.t == 32 ? 0xffffffffu : ((1u << b.t) - 1u) << (warp_lane & ~unsigned(b.t - 1));
  const GridGeometry& g = grid.g;
  const int64_t q = b.query_ids[slot];
  double qv[kGridMaxDim];
  int64_t centre[kGridMaxDim];
  for (int j = 0; j < g.dim; ++j) {
    qv[j] = b.queries[q * g.dim + j];
    centre[j] = g.coord(j, b.queries[q * g.dim + j]);
  }
  const double keep = g.trusted_sq(b.rings);  // farther candidates can never be part of a certain answer
  double* ld = b.list_d + (slot * b.t + lane) * b.k;
  int64_t* li = b.list_i + (slot * b.t + lane) * b.k;
  int n = 0;
  bool certain = false;
  for (int ring = 1; ring <= b.rings && !certain; ++ring) {
    const int64_t offsets = g.ring_offsets(ring);
    for (int64_t offset = 0; offset < offsets; ++offset) {
      uint64_t key = 0;
      const int64_t cell = g.ring_cell(centre, ring, offset, key) ? find_cell(grid.keys, grid.cells, key) : -1;
      if (cell < 0) continue;
      for (int64_t p = grid.starts[cell] + lane; p < grid.starts[cell + 1]; p += b.t) {
        const int64_t id = grid.ids[p];
        if (b.self && id == q) continue;
        const double d = exact_squared(qv, grid.points + p * g.dim, g.dim);
        if (d <= keep) insert_sorted(ld, li, n, b.k, d, id);
      }
    }
    // Certain when the group holds k candidates within this ring's trusted radius (every lane sees the same sum).
    const double bound = g.trusted_sq(ring);
    int within = 0;
    while (within < n && ld[within] <= bound) ++within;
    certain = group_sum(within, b.t, mask) >= b.k;
  }
  b.list_n[slot * b.t + lane] = n;
  __syncwarp(mask);  // the group's lists are visible to its lane 0
  if (lane != 0) return;
  b.ok[slot] = certain ? 1 : 0;
  if (certain) merge_lists(b, slot);
}

int key_bits(const GridGeometry& g) {
  uint64_t cells = 1;
  for (int j = 0; j < g.dim; ++j) cells *= static_cast<uint64_t>(g.cells[j]);
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
    // The copies above are on stream_, like every kernel that reads them; the sync is for the host rows alone,
    // which the caller may change once knn_join has returned.
    stream_.sync();
  }

  void build(const GridGeometry& geometry) override {
    GKNN_CUDA_TRY(cudaSetDevice(device_));
    geometry_ = geometry;
    const int64_t n = problem_.base.rows;
    cudaStream_t s = stream_.get();
    // Every buffer is sized before the first launch: a resize that frees memory an enqueued launch still uses
    // would rely on cudaFree waiting for the non-blocking stream.
    DeviceBuffer<uint64_t> keys{size_t(n)}, sorted_keys{size_t(n)};
    DeviceBuffer<uint32_t> ids{size_t(n)};
    DeviceBuffer<int64_t> counts{size_t(n)};
    DeviceBuffer<int64_t> runs{1};
    ids_.resize(size_t(n));
    sorted_points_.resize(size_t(n * problem_.dim()));
    cell_keys_.resize(size_t(n));
    const int bits = key_bits(geometry);
    size_t sort_bytes = 0, encode_bytes = 0;
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.data(), sorted_keys.data(), ids.data(),
                                                  ids_.data(), n, 0, bits, s));
    GKNN_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(nullptr, encode_bytes, sorted_keys.data(), cell_keys_.data(),
                                                     counts.data(), runs.data(), n, s));
    temp_.resize(std::max(sort_bytes, encode_bytes));
    cell_keys_kernel<<<unsigned((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(base_.data(), n, geometry, keys.data(),
                                                                             ids.data());
    GKNN_CUDA_CHECK_LAUNCH();
    GKNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp_.data(), sort_bytes, keys.data(), sorted_keys.data(),
                                                  ids.data(), ids_.data(), n, 0, bits, s));
    gather_kernel<<<unsigned((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(base_.data(), n, int(problem_.dim()),
                                                                          ids_.data(), sorted_points_.data());
    GKNN_CUDA_CHECK_LAUNCH();
    GKNN_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(temp_.data(), encode_bytes, sorted_keys.data(),
                                                     cell_keys_.data(), counts.data(), runs.data(), n, s));
    int64_t cells = 0;
    GKNN_CUDA_TRY(cudaMemcpyAsync(&cells, runs.data(), sizeof(int64_t), cudaMemcpyDeviceToHost, s));
    stream_.sync();  // nothing in flight: the buffers below may be reallocated
    cells_ = cells;
    // starts[0] = 0, starts[c + 1] = counts[0] + ... + counts[c].
    starts_.resize(size_t(cells + 1));
    size_t scan_bytes = 0;
    GKNN_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, counts.data(), starts_.data() + 1, cells, s));
    temp_.resize(scan_bytes);
    GKNN_CUDA_TRY(cudaMemsetAsync(starts_.data(), 0, sizeof(int64_t), s));
    GKNN_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp_.data(), scan_bytes, counts.data(), starts_.data() + 1, cells, s));
    stream_.sync();  // the temporaries above are freed on return
  }

  std::vector<int64_t> search(const std::vector<int64_t>& ids) override {
    GKNN_CUDA_TRY(cudaSetDevice(device_));
    const int64_t k = problem_.k;
    const size_t per_query = size_t(t_) * size_t(k) * (sizeof(double) + sizeof(int64_t)) + size_t(t_) * sizeof(int) +
                             size_t(k) * (sizeof(float) + sizeof(int64_t)) + sizeof(int64_t) + 1;
    const int64_t chunk = std::max<int64_t>(1, int64_t(kScratchBudget / per_query));
    std::vector<int64_t> failed;
    for (int64_t first = 0; first < int64_t(ids.size()); first += chunk) {
      const int64_t count = std::min<int64_t>(chunk, int64_t(ids.size()) - first);
      run_chunk(ids.data() + first, count, failed);
    }
    return failed;
  }

 private:
  /// Makes `device` current before the members that allocate on it (the stream) are constructed.
  static int use_device(int device) {
    GKNN_CUDA_TRY(cudaSetDevice(device));
    return device;
  }

  /// On stream_, never with the blocking cudaMemcpy2D: stream_ is non-blocking, so it does not wait for the legacy
  /// default stream, and a blocking copy from pageable memory returns once the rows are staged, before their DMA
  /// has landed. The grid build's key kernel then read a stale tail of the base (intermittent wrong cells, issue 14).
  void upload(FloatView m, DeviceBuffer<float>& out) {
    out.resize(size_t(m.rows * m.cols));
    if (m.rows == 0) return;
    GKNN_CUDA_TRY(cudaMemcpy2DAsync(out.data(), size_t(m.cols) * sizeof(float), m.data,
                                    size_t(m.row_stride()) * sizeof(float), size_t(m.cols) * sizeof(float),
                                    size_t(m.rows), cudaMemcpyHostToDevice, stream_.get()));
  }

  void run_chunk(const int64_t* ids, int64_t count, std::vector<int64_t>& failed) {
    const int64_t k = problem_.k;
    cudaStream_t s = stream_.get();
    query_ids_.resize(size_t(count));
    list_d_.resize(size_t(count * t_ * k));
    list_i_.resize(size_t(count * t_ * k));
    list_n_.resize(size_t(count * t_));
    out_d_.resize(size_t(count * k));
    out_i_.resize(size_t(count * k));
    ok_.resize(size_t(count));
    GKNN_CUDA_TRY(cudaMemcpyAsync(query_ids_.data(), ids, size_t(count) * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    const GridView grid{geometry_, cell_keys_.data(), starts_.data(), ids_.data(), sorted_points_.data(), cells_};
    const QueryBatch batch{problem_.self ? base_.data() : queries_.data(), query_ids_.data(), count,
                           int(k), t_, rings_, problem_.self, problem_.metric == Metric::L2, list_d_.data(), list_i_.data(),
                           list_n_.data(), out_d_.data(), out_i_.data(), ok_.data()};
    const int64_t threads = count * t_;
    range_query_kernel<<<unsigned((threads + kBlock - 1) / kBlock), kBlock, 0, s>>>(grid, batch);
    GKNN_CUDA_CHECK_LAUNCH();
    if (host_ok_.size() < size_t(count)) {  // page-locked, so the copies below run at full bandwidth
      host_d_ = PinnedBuffer<float>(size_t(count * k));
      host_i_ = PinnedBuffer<int64_t>(size_t(count * k));
      host_ok_ = PinnedBuffer<unsigned char>(size_t(count));
    }
    GKNN_CUDA_TRY(cudaMemcpyAsync(host_d_.data(), out_d_.data(), out_d_.bytes(), cudaMemcpyDeviceToHost, s));
    GKNN_CUDA_TRY(cudaMemcpyAsync(host_i_.data(), out_i_.data(), out_i_.bytes(), cudaMemcpyDeviceToHost, s));
    GKNN_CUDA_TRY(cudaMemcpyAsync(host_ok_.data(), ok_.data(), ok_.bytes(), cudaMemcpyDeviceToHost, s));
    stream_.sync();
    output_.scatter(k, ids, count, host_d_.data(), host_i_.data(), host_ok_.data(), failed);
  }

  Problem problem_;
  Output output_;
  int device_;  // before stream_: the stream is created on this device
  int t_;
  int rings_;
  Stream stream_;
  GridGeometry geometry_;
  DeviceBuffer<float> base_, queries_, sorted_points_;
  DeviceBuffer<uint64_t> cell_keys_;
  DeviceBuffer<int64_t> starts_;
  DeviceBuffer<uint32_t> ids_;
  DeviceBuffer<unsigned char> temp_;
  int64_t cells_ = 0;
  DeviceBuffer<int64_t> query_ids_;
  DeviceBuffer<double> list_d_;
  DeviceBuffer<int64_t> list_i_;
  DeviceBuffer<int> list_n_;
  DeviceBuffer<float> out_d_;
  DeviceBuffer<int64_t> out_i_;
  DeviceBuffer<unsigned char> ok_;
  PinnedBuffer<float> host_d_;
  PinnedBuffer<int64_t> host_i_;
  PinnedBuffer<unsigned char> host_ok_;
};

}  // namespace

std::unique_ptr<GridSearcher> make_cuda_searcher(const Problem& problem, const Output& output, int device,
                                                 int threads_per_query, int rings) {
  return std::make_unique<CudaSearcher>(problem, output, device, threads_per_query, rings);
}

}  // namespace gknn::detail::join
