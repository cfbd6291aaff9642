// device_list_merge.cu: backend.hpp's DeviceListMerge: the key lists of a ShardedIndex's shards merged on the
// first shard's device. Each part gets a lease of device buffers and a stream on its device (kept between searches
// in an IdlePool, as the pipelines are); the merge makes every part's indices global on its own device, brings the
// other devices' lists over by peer copies and folds them in one at a time with the two-list merge (merge.cuh).
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "core/backend.hpp"
#include "core/env_switch.hpp"
#include "core/finalize.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/device_scope.cuh"
#include "cuda/common/error.cuh"
#include "cuda/common/idle_pool.hpp"
#include "cuda/hooks.hpp"
#include "cuda/pipeline/device_list_merge.cuh"
#include "cuda/pipeline/merge.cuh"
#include "cuda/pipeline/result_memory.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {
namespace {

std::atomic<bool> g_enabled{true};
std::atomic<int64_t> g_merges{0};


constexpr int kThreads = 256;
/// A lease holding more than this is freed after its merge, not kept (searches with a huge q x k are rare).
constexpr size_t kKeptLeaseBytes = size_t(512) << 20;
constexpr size_t kIdleLeasesPerDevice = 4;
/// The merge's buffers may take at most this fraction of a device's free memory; past it the host merges.
constexpr size_t kFreeMemoryShare = 8;

/// Local row -> global row through the part's segments (GlobalRows): the last segment whose local_begin <= local.
__global__ void to_global_kernel(int64_t* __restrict__ labels, int64_t count, const int64_t* __restrict__ local_begin,
                                 const int64_t* __restrict__ global_begin, int segments) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < count; i += int64_t(gridDim.x) * kThreads) {
    const int64_t local = labels[i];
    int lo = 0, hi = segments - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (local_begin[mid] <= local) lo = mid;
      else hi = mid - 1;
    }
    labels[i] = global_begin[lo] + (local - local_begin[lo]);
  }
}

}  // namespace

bool device_list_merge_enabled() {
  static const bool off = env_switch_off("GKNN_DEVICE_LIST_MERGE");
  return !off && g_enabled.load();
}

bool merge_fits(int device, size_t bytes) {
  const DeviceScope scope(device);
  size_t free_bytes = 0, total = 0;
  device_memory(&free_bytes, &total);
  return bytes <= free_bytes / kFreeMemoryShare;
}

void make_labels_global(int64_t* labels, int64_t count, const std::vector<int64_t>& local_begin,
                        const std::vector<int64_t>& global_begin, DeviceBuffer<int64_t>& table, const Stream& stream) {
  const int segments = static_cast<int>(local_begin.size());
  if (count == 0 || segments == 0 || (segments == 1 && global_begin[0] == local_begin[0])) return;  // already global
  std::vector<int64_t> host(local_begin);
  host.insert(host.end(), global_begin.begin(), global_begin.end());
  table.resize(host.size());
  GKNN_CUDA_TRY(cudaMemcpyAsync(table.data(), host.data(), host.size() * sizeof(int64_t), cudaMemcpyHostToDevice,
                                stream.get()));
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 4096);
  to_global_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream.get()>>>(labels, count, table.data(),
                                                                                table.data() + segments, segments);
  GKNN_CUDA_CHECK_LAUNCH();
  stream.sync();
}

MergeLists fold_lists(MergeLists first, size_t others, const std::function<MergeLists(size_t)>& stage, int64_t rows,
                      int64_t k, KeyLists& a, KeyLists& b, cudaStream_t stream) {
  MergeLists acc = first;
  KeyLists* next = &a;
  KeyLists* after = &b;
  for (size_t i = 0; i < others; ++i) {
    const MergeLists other = stage(i);
    const int64_t out_k = std::min(k, acc.k + other.k);
    merge_sorted_lists(SortedLists{acc.keys, acc.labels, acc.k, acc.k},
                       SortedLists{other.keys, other.labels, other.k, other.k}, rows, out_k, next->keys.data(),
                       next->labels.data(), out_k, stream);
    acc = MergeLists{next->keys.data(), next->labels.data(), out_k};
    std::swap(next, after);
  }
  return acc;
}

KeyResult download_lists(MergeLists lists, int64_t rows, const Stream& stream) {
  register_page_locked_results();
  KeyResult out;
  {
    const PageLockedResults page_locked;  // the download lands in the result directly where blocks allow
    out = allocate_result_populated(rows, lists.k);
  }
  const size_t n = static_cast<size_t>(rows * lists.k);
  GKNN_CUDA_TRY(cudaMemcpyAsync(out.distances.data(), lists.keys, n * sizeof(float), cudaMemcpyDeviceToHost,
                                stream.get()));
  GKNN_CUDA_TRY(cudaMemcpyAsync(out.indices.data(), lists.labels, n * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                stream.get()));
  stream.sync();
  return out;
}

namespace {

/// One part's buffers on its device: `own` its search's lists (on the merging device also the running merge's
/// other half), `peer` a list copied from another device, `merged` the running merge, `segments` the part's
/// segment table. Made and destroyed with its device current.
struct Lease {
  explicit Lease(int d) : device(d) {}
  int device;
  Stream stream;
  KeyLists own, peer, merged;
  DeviceBuffer<int64_t> segments;

  size_t bytes() const { return own.bytes() + peer.bytes() + merged.bytes() + segments.capacity_bytes(); }
};
using LeasePtr = std::unique_ptr<Lease>;

LeasePtr take_lease(int device) {
  if (std::optional<LeasePtr> idle = idle_pool<LeasePtr>().take(device)) return std::move(*idle);
  const DeviceScope scope(device);
  return std::make_unique<Lease>(device);
}

void drop_lease(LeasePtr& lease) noexcept {
  if (!lease) return;
  const DeviceScope scope(lease->device, std::nothrow);
  lease.reset();
}

void give_lease(LeasePtr& lease) noexcept {
  if (lease && lease->bytes() <= kKeptLeaseBytes) {
    try {
      if (idle_pool<LeasePtr>().give(lease->device, lease, kIdleLeasesPerDevice)) return;
    } catch (...) {  // no room in the pool: freed below
    }
  }
  drop_lease(lease);
}

/// Peer access from `from` to `to` where the devices allow it (NVLink or PCIe peer copies; without it the
/// driver stages peer copies through the host, slower but the same bytes). Once a pair; failures are not errors.
void enable_peer_access(int from, int to) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  const std::lock_guard<std::mutex> lock(mutex);
  if (from == to || !tried.insert({from, to}).second) return;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can) {
    (void)cudaGetLastError();
    return;
  }
  const DeviceScope scope(from);
  if (cudaDeviceEnablePeerAccess(to, 0) != cudaSuccess) (void)cudaGetLastError();  // e.g. already enabled
}

class Merge final : public DeviceListMerge {
 public:
  Merge(std::vector<DeviceListPart> parts, int64_t rows, int64_t k) : parts_(std::move(parts)), rows_(rows), k_(k) {
    const int merging = parts_[0].device;
    int64_t peer_k = 0;
    for (size_t s = 1; s < parts_.size(); ++s)
      if (parts_[s].device != merging) peer_k = std::max(peer_k, parts_[s].k);
    leases_.resize(parts_.size());
    try {
      lease_buffers(merging, peer_k);
    } catch (...) {  // a throwing constructor runs no destructor: the leases go back here
      for (LeasePtr& l : leases_) give_lease(l);
      throw;
    }
  }

  ~Merge() override {
    for (LeasePtr& l : leases_) {
      // A search that threw may have left work in flight on the part's buffers: it ends before they are reused.
      if (!merged_ && l) {
        const DeviceScope scope(l->device, std::nothrow);
        GKNN_CUDA_TRY_NOTHROW(cudaDeviceSynchronize());
      }
      give_lease(l);
    }
  }

  ResultView part(int s) const override {
    const Lease& l = *leases_[size_t(s)];
    return ResultView{l.own.keys.data(), l.own.labels.data(), rows_, parts_[size_t(s)].k, Memory::Device};
  }

  KeyResult merge() override {
    for (size_t s = 0; s < parts_.size(); ++s) make_global(s);
    Lease& m = *leases_[0];
    const DeviceScope scope(m.device);
    // The running merge ping-pongs between `merged` and the first part's own lists (sized for k a row).
    const MergeLists merged = fold_lists(
        MergeLists{m.own.keys.data(), m.own.labels.data(), parts_[0].k}, parts_.size() - 1,
        [&](size_t other) { return lists_on_merging_device(other + 1); }, rows_, k_, m.merged, m.own, m.stream.get());
    GKNN_EXPECT(merged.k == k_, ErrorCode::Internal, "DeviceListMerge: the parts hold ", merged.k,
                " entries a row, not k = ", k_);
    KeyResult out = download_lists(merged, rows_, m.stream);
    merged_ = true;
    g_merges.fetch_add(1);
    return out;
  }

 private:
  /// Each part's lease and buffers on its device; the merging part's also hold the running merge and a peer copy.
  void lease_buffers(int merging, int64_t peer_k) {
    for (size_t s = 0; s < parts_.size(); ++s) {
      leases_[s] = take_lease(parts_[s].device);
      Lease& l = *leases_[s];
      const DeviceScope scope(l.device);
      // The merging part's own lists also hold the running merge (ping-pong with `merged`): room for k a row.
      l.own.resize(static_cast<size_t>(rows_ * (s == 0 && parts_.size() > 1 ? k_ : parts_[s].k)));
      l.segments.resize(2 * parts_[s].local_begin.size());
      if (s == 0 && parts_.size() > 1) {
        l.merged.resize(static_cast<size_t>(rows_ * k_));
        if (peer_k > 0) l.peer.resize(static_cast<size_t>(rows_ * peer_k));
      }
      if (s > 0) enable_peer_access(merging, parts_[s].device);
    }
  }

  /// Part s's indices made global on its own device (its stream: waited for before its lists are read).
  void make_global(size_t s) {
    Lease& l = *leases_[s];
    const DeviceListPart& part = parts_[s];
    const DeviceScope scope(l.device);
    make_labels_global(l.own.labels.data(), rows_ * part.k, part.local_begin, part.global_begin, l.segments, l.stream);
  }

  /// Part s's global lists where the merging device reads them: its own buffers on that device, else a peer copy
  /// (enqueued on the merge's stream: the peer buffer is reused by the next part after this one's merge).
  MergeLists lists_on_merging_device(size_t s) {
    Lease& m = *leases_[0];
    const Lease& l = *leases_[s];
    const int64_t k = parts_[s].k;
    if (l.device == m.device) return MergeLists{l.own.keys.data(), l.own.labels.data(), k};
    const size_t n = static_cast<size_t>(rows_ * k);
    GKNN_CUDA_TRY(cudaMemcpyPeerAsync(m.peer.keys.data(), m.device, l.own.keys.data(), l.device, n * sizeof(float),
                                      m.stream.get()));
    GKNN_CUDA_TRY(cudaMemcpyPeerAsync(m.peer.labels.data(), m.device, l.own.labels.data(), l.device,
                                      n * sizeof(int64_t), m.stream.get()));
    return MergeLists{m.peer.keys.data(), m.peer.labels.data(), k};
  }

  std::vector<DeviceListPart> parts_;
  int64_t rows_, k_;
  std::vector<LeasePtr> leases_;
  bool merged_ = false;
};

/// Whether the merge's buffers fit merge_fits on every device.
bool fits(const std::vector<DeviceListPart>& parts, int64_t rows, int64_t k) {
  std::vector<std::pair<int, size_t>> need;  // device, bytes
  auto add = [&need](int device, size_t bytes) {
    for (auto& [d, b] : need)
      if (d == device) return void(b += bytes);
    need.emplace_back(device, bytes);
  };
  for (size_t s = 0; s < parts.size(); ++s) add(parts[s].device, list_bytes(rows, s == 0 ? k : parts[s].k));
  add(parts[0].device, 2 * list_bytes(rows, k));  // the running merge and a peer copy
  return std::all_of(need.begin(), need.end(), [](const auto& n) { return merge_fits(n.first, n.second); });
}

}  // namespace

void set_device_list_merge_enabled(bool on) { g_enabled.store(on); }
int64_t device_list_merges() { return g_merges.load(); }

std::unique_ptr<DeviceListMerge> device_list_merge(const std::vector<DeviceListPart>& parts, int64_t rows,
                                                   int64_t k) {
  if (!device_list_merge_enabled() || parts.empty() || rows <= 0 || !fits(parts, rows, k)) return nullptr;
  try {
    return std::make_unique<Merge>(parts, rows, k);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::OutOfMemory) return nullptr;  // the host merges instead
    throw;
  }
}

void release_list_merge_buffers() {
  for (auto& [device, leases] : idle_pool<LeasePtr>().drain())
    for (LeasePtr& l : leases) drop_lease(l);
}

}  // namespace gknn::detail::cuda
