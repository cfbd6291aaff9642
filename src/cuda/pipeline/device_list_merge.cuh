// device_list_merge.cuh: what the rest of the CUDA backend calls of device_list_merge.cu (backend.hpp declares
// DeviceListMerge and ProcessListMerge themselves), and the steps both merges are made of: local row indices made
// global on a device, lists folded into one with the two-list merge, the result brought to a page-locked host result.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/backend.hpp"
#include "cuda/common/buffer.cuh"

namespace gknn::detail::cuda {

/// Frees the merge's kept device buffers and streams (part of release_cached_device_resources).
void release_list_merge_buffers();

/// Whether lists may merge on a device (hooks.hpp set_device_list_merge_enabled, GKNN_DEVICE_LIST_MERGE=0).
bool device_list_merge_enabled();

/// Sorted key lists with their row indices in device memory, rows x (the k they were sized for).
struct KeyLists {
  DeviceBuffer<float> keys;
  DeviceBuffer<int64_t> labels;

  void resize(size_t n) {
    keys.resize(n);
    labels.resize(n);
  }
  size_t bytes() const { return keys.capacity_bytes() + labels.capacity_bytes(); }
};

/// Lists as a merge reads them: rows x k (no padding) at keys / labels.
struct MergeLists {
  const float* keys;
  const int64_t* labels;
  int64_t k;
};

/// Bytes of rows x k lists (float keys, int64 rows).
inline size_t list_bytes(int64_t rows, int64_t k) {
  return static_cast<size_t>(rows * k) * (sizeof(float) + sizeof(int64_t));
}

/// Whether `bytes` more fit a device's share of its free memory that a merge may take (an eighth: the searches'
/// tiles need it more; the host merges otherwise).
bool merge_fits(int device, size_t bytes);

/// The `count` local row indices at `labels` made global through the segments (DeviceListPart: local rows from
/// local_begin[i] are global rows from global_begin[i]) on `stream`, the current device; `table` holds the segments
/// there. Returns once done (the pageable table is read before it goes; another device reads the labels next).
void make_labels_global(int64_t* labels, int64_t count, const std::vector<int64_t>& local_begin,
                        const std::vector<int64_t>& global_begin, DeviceBuffer<int64_t>& table, const Stream& stream);

/// `first` merged with `others` lists in turn into rows x (at most k) on `stream`, the current device: stage(i)
/// gives the i-th other's lists where this device reads them (its own memory, or a copy it enqueues on `stream`);
/// the running merge ping-pongs between `a` and `b` (b is written from the second merge on; it may be first's own
/// memory), both sized for rows x k. Returns the merged lists (`first` itself without others).
MergeLists fold_lists(MergeLists first, size_t others, const std::function<MergeLists(size_t)>& stage, int64_t rows,
                      int64_t k, KeyLists& a, KeyLists& b, cudaStream_t stream);

/// rows x lists.k lists brought to a host result (page-locked where the blocks allow: the copy lands there directly);
/// returns once they are there.
KeyResult download_lists(MergeLists lists, int64_t rows, const Stream& stream);

}  // namespace gknn::detail::cuda
