// result_memory.cuh: page-locked Results. A search's Result is asked for by the CUDA result writer
// (result_writer.cuh); inside its PageLockedResults scope (core/finalize.hpp) the arrays come from the process's
// PinnedPool, so that the finalised tiles are copied from the device straight into them: no pinned slot, no
// copy-out on the host after the download (SIFT1M's 12 MB result: 0.35-1.1 ms of the host's memcpy, issue 13),
// no page population. A Result gives its blocks back to the pool when it is destroyed, and the next search of
// the size takes them again.
//
// Bounds: arrays up to kMostResultBytes; new blocks are allocated while at most kMostResultBlocks taken ones are
// out (two Results: a loop's new result is made before the old one is dropped), so a caller who keeps every
// result locks no more than that and then gets ordinary memory, as before. GKNN_PINNED_RESULTS=0 turns it off.
#pragma once

#include <cstddef>

namespace gknn::detail::cuda {

constexpr size_t kMostResultBytes = size_t(128) << 20;
constexpr int kMostResultBlocks = 4;

/// Registers the page-locked result memory with the core (once a process; nothing where it is turned off).
void register_page_locked_results();
/// Whether kept page-locked blocks would serve a result of `n` entries now (its destination is then made at once,
/// not on a helper thread).
bool page_locked_result_kept(size_t n);
/// Whether `p` points into page-locked host memory (cudaHostAlloc'd or registered), where copies from the device
/// land directly.
bool page_locked(const void* p) noexcept;

}  // namespace gknn::detail::cuda
