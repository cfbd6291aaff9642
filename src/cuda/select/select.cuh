// select.cuh: the contract of every GPU k-selection algorithm, and the table that maps the enum to them.
//
// A selector reads `rows` rows of `cols` keys in device memory and writes, per row, the k smallest keys with
// their labels, sorted in the library's total order (core/order.hpp: ascending key, ties by smaller label).
// Labels are `labels[r * stride + c]` when given, else `label_offset + c`. Keys are finite or +-inf (no NaN).
// Adding an algorithm: a line in gknn/algorithms.def, and a folder under select/ with the code and its entries.inc
// (see registry.cu, docs/architecture.md); Auto considers it once it is in choose.cu's preference list.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "cuda/common/buffer.cuh"
#include "gknn/types.hpp"

namespace gknn::detail::cuda {

struct SelectInput {
  const float* keys = nullptr;
  const int64_t* labels = nullptr;  ///< optional, same stride as keys
  int64_t stride = 0;               ///< elements between row starts of keys (and labels)
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t label_offset = 0;         ///< added to the column index when labels == nullptr
};

struct SelectOutput {
  float* keys = nullptr;
  int64_t* labels = nullptr;
  int64_t stride = 0;  ///< elements between row starts, >= k
};

struct SelectContext {
  const SelectOptions& options;
  Workspace& workspace;
  cudaStream_t stream;
  int device;
};

/// What the launcher of a bucketed kernel needs (warp-queue family, partial_bitonic): rows, k, output, stream, and
/// the resolved thread-queue length (warp-queue family only; 2..10).
struct RowsLaunch {
  const SelectInput* in;
  int k;
  const SelectOutput* out;
  cudaStream_t stream;
  int thread_queue = 0;
};

/// Runs asynchronously on ctx.stream; 1 <= k <= min(cols, max_k).
using SelectFn = void (*)(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx);
/// Device scratch bytes one call needs (for memory planning); may over-estimate.
using SelectWorkspaceFn = size_t (*)(int64_t rows, int64_t cols, int64_t k);

struct SelectEntry {
  SelectAlgorithm algorithm;
  int64_t max_k;  ///< largest k served (INT64_MAX for any k <= cols)
  SelectFn run;
  SelectWorkspaceFn workspace_bytes;
};

/// The registered entries (registry.cu), in table order.
const SelectEntry* select_entries_begin();
const SelectEntry* select_entries_end();
/// nullptr when the algorithm has no GPU implementation in this build.
const SelectEntry* find_select(SelectAlgorithm algorithm);
/// Auto's choice for a problem shape (every k); `why`, when given, gets the reason (explain_search).
SelectAlgorithm choose_select(int64_t rows, int64_t cols, int64_t k, std::string* why = nullptr);
/// Resolves Auto, checks the algorithm exists and serves k; throws Unsupported naming it otherwise.
const SelectEntry& resolve_select(SelectAlgorithm requested, int64_t rows, int64_t cols, int64_t k,
                                  std::string* why = nullptr);

}  // namespace gknn::detail::cuda
