// process_list_merge.cu: backend.hpp's ProcessListMerge: the key lists of the processes of one host (MPI ranks with a
// CUDA device each) merged on one process's device. Each process's lists live in one cudaMalloc'd buffer (keys, then
// row indices) that it exports by CUDA IPC; the merging process maps the others' buffers once (kept until
// close_imports), copies their lists to its device and folds them in with device_list_merge.cuh's steps.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/common/device_scope.cuh"
#include "cuda/common/error.cuh"
#include "cuda/hooks.hpp"
#include "cuda/pipeline/device_list_merge.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {
namespace {

static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(ExportedLists::handle), "ExportedLists holds a cudaIpcMemHandle_t");

std::atomic<int64_t> g_merges{0};

/// Byte offset of the row indices in a buffer of `capacity` entries (keys first, indices 256-byte aligned).
size_t labels_offset(int64_t capacity) { return (static_cast<size_t>(capacity) * sizeof(float) + 255) / 256 * 256; }
size_t buffer_bytes(int64_t capacity) {
  return labels_offset(capacity) + static_cast<size_t>(capacity) * sizeof(int64_t);
}

/// Another process's buffer mapped into this one.
struct Import {
  ExportedLists lists;
  void* base = nullptr;
};

bool same_buffer(const ExportedLists& a, const ExportedLists& b) {
  return a.generation == b.generation && a.capacity == b.capacity && a.handle == b.handle;
}

class ProcessMerge final : public ProcessListMerge {
 public:
  ~ProcessMerge() override {
    close_imports();
    if (device_ < 0) return;
    const DeviceScope scope(device_, std::nothrow);
    buffer_ = {}, a_ = {}, b_ = {}, peer_ = {}, table_ = {};
    stream_.reset();
  }

  bool must_grow(int64_t rows, int64_t k) const override { return rows * k > capacity_; }

  std::optional<ResultView> own(int device, int64_t rows, int64_t k) override {
    GKNN_EXPECT(device_ < 0 || device == device_, ErrorCode::Internal, "ProcessListMerge: lists on device ", device,
                " after device ", device_);
    if (rows * k > capacity_ && !merge_fits(device, buffer_bytes(rows * k) + 2 * list_bytes(rows, k)))
      return std::nullopt;  // its buffer and the merge's (were this process the merging one) past the share
    device_ = device;
    const DeviceScope scope(device_);
    try {
      if (!stream_) stream_ = std::make_unique<Stream>();
      if (rows * k > capacity_) {
        buffer_ = {};  // freed first: the larger one may need its room
        capacity_ = 0;
        buffer_.resize(buffer_bytes(rows * k));
        capacity_ = rows * k;
        ++generation_;
        handle_ready_ = false;
      }
    } catch (const Error& e) {
      if (e.code() == ErrorCode::OutOfMemory) return std::nullopt;
      throw;
    }
    rows_ = rows, k_ = k;
    return ResultView{keys(), labels(), rows, k, Memory::Device};
  }

  ExportedLists publish(const std::vector<int64_t>& local_begin, const std::vector<int64_t>& global_begin) override {
    const DeviceScope scope(device_);
    make_labels_global(labels(), rows_ * k_, local_begin, global_begin, table_, *stream_);
    if (!handle_ready_) {
      cudaIpcMemHandle_t handle;
      GKNN_CUDA_TRY(cudaIpcGetMemHandle(&handle, buffer_.data()));
      std::memcpy(handle_.data(), &handle, sizeof handle);
      handle_ready_ = true;
    }
    ExportedLists out;
    out.handle = handle_;
    out.capacity = capacity_, out.rows = rows_, out.k = k_, out.generation = generation_;
    return out;
  }

  KeyResult download() override {
    const DeviceScope scope(device_);
    return download_lists(MergeLists{keys(), labels(), k_}, rows_, *stream_);
  }

  std::optional<KeyResult> merge(const std::vector<ExportedLists>& others, int64_t k) override {
    const DeviceScope scope(device_);
    std::vector<MergeLists> lists;
    int64_t peer_k = 0;
    for (const ExportedLists& o : others) {
      GKNN_EXPECT(o.rows == rows_, ErrorCode::Internal, "ProcessListMerge: lists of ", o.rows, " rows, not ", rows_);
      const void* base = mapped(o);
      if (!base) return std::nullopt;
      const auto* bytes = static_cast<const unsigned char*>(base);
      lists.push_back({reinterpret_cast<const float*>(bytes),
                       reinterpret_cast<const int64_t*>(bytes + labels_offset(o.capacity)), o.k});
      peer_k = std::max(peer_k, o.k);
    }
    try {
      a_.resize(static_cast<size_t>(rows_ * k));
      if (others.size() > 1) b_.resize(static_cast<size_t>(rows_ * k));
      peer_.resize(static_cast<size_t>(rows_ * peer_k));
    } catch (const Error& e) {
      if (e.code() == ErrorCode::OutOfMemory) return std::nullopt;
      throw;
    }
    // Each other's lists are copied to this device first (over NVLink from another GPU); the peer buffer is reused
    // by the next one after this one's merge (the same stream).
    const cudaStream_t stream = stream_->get();
    const MergeLists merged = fold_lists(
        MergeLists{keys(), labels(), k_}, lists.size(),
        [&](size_t i) {
          const size_t n = static_cast<size_t>(rows_ * lists[i].k);
          GKNN_CUDA_TRY(cudaMemcpyAsync(peer_.keys.data(), lists[i].keys, n * sizeof(float), cudaMemcpyDefault,
                                        stream));
          GKNN_CUDA_TRY(cudaMemcpyAsync(peer_.labels.data(), lists[i].labels, n * sizeof(int64_t),
                                        cudaMemcpyDefault, stream));
          return MergeLists{peer_.keys.data(), peer_.labels.data(), lists[i].k};
        },
        rows_, k, a_, b_, stream);
    GKNN_EXPECT(merged.k == k, ErrorCode::Internal, "ProcessListMerge: the lists hold ", merged.k,
                " entries a row, not k = ", k);
    KeyResult out = download_lists(merged, rows_, *stream_);
    g_merges.fetch_add(1);
    return out;
  }

  void close_imports() noexcept override {
    if (imports_.empty()) return;
    const DeviceScope scope(device_, std::nothrow);
    for (const Import& i : imports_) GKNN_CUDA_TRY_NOTHROW(cudaIpcCloseMemHandle(i.base));
    imports_.clear();
  }

 private:
  float* keys() const { return reinterpret_cast<float*>(buffer_.data()); }
  int64_t* labels() const { return reinterpret_cast<int64_t*>(buffer_.data() + labels_offset(capacity_)); }

  /// Another process's buffer in this one: mapped the first time (peer access to its device enabled then), or
  /// nothing where the driver cannot map it.
  const void* mapped(const ExportedLists& o) {
    for (const Import& i : imports_)
      if (same_buffer(i.lists, o)) return i.base;
    cudaIpcMemHandle_t handle;
    std::memcpy(&handle, o.handle.data(), sizeof handle);
    void* base = nullptr;
    if (cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    imports_.push_back({o, base});
    return base;
  }

  int device_ = -1;
  std::unique_ptr<Stream> stream_;
  DeviceBuffer<unsigned char> buffer_;  // cudaMalloc'd: IPC exports whole allocations
  int64_t capacity_ = 0, rows_ = 0, k_ = 0, generation_ = 0;
  std::array<unsigned char, 64> handle_{};
  bool handle_ready_ = false;
  KeyLists a_, b_, peer_;  // the running merge and the copy of another's lists (on the merging process)
  DeviceBuffer<int64_t> table_;
  std::vector<Import> imports_;
};

}  // namespace

int64_t process_list_merges() { return g_merges.load(); }

std::unique_ptr<ProcessListMerge> process_list_merge() {
  if (!device_list_merge_enabled() || !available()) return nullptr;
  return std::make_unique<ProcessMerge>();
}

}  // namespace gknn::detail::cuda
