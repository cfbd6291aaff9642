// value_scan.cuh: the device scan's cached resources (value_scan.cu; the scan itself is core/backend.hpp's
// device_value_stats).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <cuda_runtime.h>

#include "core/backend.hpp"

namespace gknn::detail::cuda {

/// The value scan of rows that reach the device chunk by chunk on a caller's stream: Index::add scans host rows
/// on the device after their upload (pipeline/upload.cuh) instead of in a host pass over them before it, and gets
/// the facts and the NaN/Inf error that scanning all the rows at once gives (device_value_stats, the host scan).
/// One reduction kernel per chunk into one result; one copy back at the end.
class ChunkedValueScan {
 public:
  /// Leases a scan slot of the current device and clears its result on `s`; `total`: rows of the whole.
  ChunkedValueScan(int64_t total, int64_t cols, cudaStream_t s);
  ~ChunkedValueScan();
  ChunkedValueScan(const ChunkedValueScan&) = delete;
  ChunkedValueScan& operator=(const ChunkedValueScan&) = delete;
  /// Scans rows [first_row, first_row + count) of the whole, at `rows` (device, `stride` floats apart), on `s`.
  void add(const float* rows, int64_t first_row, int64_t count, int64_t stride, cudaStream_t s);
  /// Enqueues the copy of the result to the host on `s`, after every add().
  void fetch(cudaStream_t s);
  /// Once `s` of fetch() is synchronised: the facts of all rows, or InvalidArgument naming the first non-finite row
  /// of the whole as the host scan names it (`what`); its values are read from `rows` (device, all the rows,
  /// `stride` floats apart).
  ValueStats finish(const float* rows, int64_t stride, std::string_view what);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Frees the idle scan slots of every device (streams, result words); part of release_cached_device_resources
/// (hooks.hpp). A later scan makes new ones.
void release_scan_slots();

}  // namespace gknn::detail::cuda
