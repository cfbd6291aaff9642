// finalize.hpp: turning a backend's key result into the user's result (values, padding for k > n).
#pragma once

#include <vector>

#include "core/backend.hpp"

namespace gknn::detail {

/// sqrt and pow are monotone but not injective in float: distinct keys can become equal values. Equal values
/// must still be ordered by index (the total order), so each run of equal values gets its indices re-sorted.
void restore_tie_order(const float* values, int64_t* indices, int64_t count);

/// keys: q x k_eff ascending keys; returns q x k values in the user's metric, padded with -1 / worst value.
Result finalize(KeyResult keys, Metric metric, double p, int64_t k);

/// A rows x k Result whose arrays are allocated, their values left uninitialised (HostArray::for_overwrite):
/// whoever asks for it writes every entry (OutOfMemory names the size when they cannot be allocated).
Result allocate_result(int64_t rows, int64_t k);
/// The same for a large result made on a helper thread while the device computes: the pages of the arrays are
/// also allocated there (madvise MADV_POPULATE_WRITE on Linux >= 5.14, else one write per page; a thread per
/// 16 MiB, up to 8), so the copy-out of the tiles, on the search's path, takes no page faults. No pass over the
/// values: 10k x 2048 entries (245 MB) were zero-filled on one thread by std::vector before.
/// Inside a PageLockedResults scope of the thread, both arrays come from the page-locked memory the CUDA backend
/// registered (set_page_locked_memory) where it gives them: its copies from the device land in them directly, with
/// no copy-out and no page population.
Result allocate_result_populated(int64_t rows, int64_t k);

/// Page-locked host memory for Results (cuda/pipeline/result_memory.cuh registers it): take(bytes, &held) gives a
/// block of at least `bytes` (`held` its size) or null; give(block, held) takes it back.
struct PageLockedMemory {
  void* (*take)(size_t bytes, size_t* held) noexcept = nullptr;
  HostArray<float>::Releaser give = nullptr;  // the same function type for every HostArray<T>
};
void set_page_locked_memory(PageLockedMemory memory) noexcept;
/// While one lives on a thread, allocate_result_populated asks the page-locked memory first (the CUDA result
/// writer's destinations, which its copies write into).
class PageLockedResults {
 public:
  PageLockedResults() noexcept;
  ~PageLockedResults();
  PageLockedResults(const PageLockedResults&) = delete;
  PageLockedResults& operator=(const PageLockedResults&) = delete;

 private:
  bool outer_;
};
/// The page population of allocate_result_populated alone, for a result that writers may already be filling (it
/// never changes a value: the pages are faulted in for writing, or touched by an atomic add of 0).
void populate_result(Result& r);
/// The storage of a Result as a host ResultView.
ResultView view_of(Result& r);

/// An OutputSpec that writes a search's keys unchanged into `keys` (rows x k, key form, no ids): the squared-L2
/// "finalisation" is the identity on keys. `keys` is allocated (populated) when the search asks for it.
OutputSpec key_output(KeyResult& keys, int64_t rows, int64_t k);
/// The same into storage the caller has (host or device, dest.k entries a row): a shard's part of a merge on the
/// device, or its rows of one result.
OutputSpec key_output_into(const ResultView& dest);

/// Writes guarded or merged key results through `out`: host destinations by finalize_into, device destinations
/// through a host result copied to the device (the cuda backend's upload_result).
void write_keys(const KeyResult& keys, const OutputSpec& out, int threads);

/// Writes key results over some rows of the destination (keys row i -> destination row rows[i], in the user's
/// form; a device destination through a host copy scattered on the device, cuda::scatter_rows). The guard's
/// retried queries, after the first pass wrote every row.
void write_rows(const KeyResult& keys, const std::vector<int64_t>& rows, const OutputSpec& out, int threads);

/// SearchParams as a backend sees them (key metric, k clipped to n).
SearchParams key_params(const SearchParams& params, int64_t n);

}  // namespace gknn::detail
