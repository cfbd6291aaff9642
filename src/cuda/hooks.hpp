// hooks.hpp: test and benchmark hooks into the CUDA backend (plain C++; no CUDA headers needed).
// They change process-wide behaviour, so tests that set one reset it before they end (HookGuard below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gknn::detail::cuda {

/// Forces the pipeline's tile sizes (rows of queries / base rows per tile); 0 = the planner's choice.
/// With a forced base tile, a one-shot search also streams the base from the host instead of uploading it whole.
struct TileOverride {
  int64_t query_rows = 0;
  int64_t base_rows = 0;
};
void set_tile_override(TileOverride tiles);

/// Pretends the device's linear-texture limit is `elements` (0 = the real limit), to exercise garcia_texture's
/// fallback to garcia_global.
void set_texture_limit_override(int64_t elements);
/// How many garcia_texture calls fell back to garcia_global since the process started.
int64_t texture_fallback_count();

/// Off: searches of an Index neither make nor read the fused kernel's kept operand copy of the base (OperandCache)
/// and Auto chooses as for a one-shot search, so that tests and benchmarks compare with the per-search conversion.
/// On by default.
void set_operand_cache_enabled(bool on);
/// Off: the fused kernel leaves the splits' lists of a few-query search to the pipeline's selection instead of
/// merging them itself (FusedTarget::merge_splits), so that tests and benchmarks compare both. On by default.
void set_fused_split_merge_enabled(bool on);
/// Off: a ShardedIndex whose shards are CUDA devices downloads every shard's key lists and merges them on the host
/// instead of on the first shard's device (backend.hpp DeviceListMerge), so that tests and benchmarks compare both.
/// On by default (GKNN_DEVICE_LIST_MERGE=0 turns it off for a process).
void set_device_list_merge_enabled(bool on);
/// Merges of shards' lists on a device since the process started: tests see that the device merge served.
int64_t device_list_merges();
/// Merges of several processes' lists on this process's device (backend.hpp ProcessListMerge: the MPI ranks of one
/// host) since it started; the same switch turns them off.
int64_t process_list_merges();
/// On: the exactness guard's certificate inside a search reads its candidates' rows through shared memory in
/// coalesced chunks (certify.cu's staged kernel) instead of one row per thread; the same float64 keys bit for bit.
/// On by default (H200: d = 960 searches 1.7-2.2x faster); GKNN_STAGED_CERTIFICATE=0 turns it off for a process.
void set_staged_certificate_enabled(bool on);
/// Device allocations (gknn's own, common/buffer.cuh allocate_device) of more than `bytes` fail as if the device
/// were out of memory (0, the default: no limit), so that tests reach what a search does when an allocation fails:
/// it plans again within less memory (pipeline/search.cuh run_search_within_memory).
void set_device_allocation_limit(size_t bytes);
/// Base rows converted into kept operand copies since the process started (a search that finds the copy filled
/// converts none): tests see that the copy is used, and made again after the base changed.
int64_t operand_cache_rows_converted();

/// Per-stage device time of the last search (CUDA events; only while stage timing is on).
struct StageTimes {
  double upload_ms = 0;    ///< host -> device copies of query and base tiles (upload stream)
  double distance_ms = 0;  ///< distance kernels (plus norms)
  double select_ms = 0;    ///< per-tile k-selection
  double merge_ms = 0;     ///< merging tile top-k lists into the running top-k
  double download_ms = 0;  ///< device -> host copies of the results
  double finalize_ms = 0;  ///< key -> value conversion, tie order, padding, ids (on the device)
  double device_ms = 0;    ///< first to last event of the search on the compute stream
  double setup_ms = 0;     ///< host: from entering the search pipeline to its first queued device work
  double pack_ms = 0;      ///< host, inside device_ms: query tiles (a streamed base's tiles) packed into pinned slots
  double copy_out_ms = 0;  ///< host, inside device_ms: finalised tiles copied from pinned slots into a host result
  int64_t query_tiles = 0;
  int64_t base_tiles = 0;  ///< per query tile
};
/// Records CUDA events around every stage (adds a little overhead); off by default.
void set_stage_timing(bool on);
StageTimes last_stage_times();

/// Device memory held by gknn's buffers now (every cudaMalloc of the library), and the most they held since the last
/// reset_device_buffer_peak(): tests check that repeated searches allocate nothing, without cudaMemGetInfo (which
/// counts other processes and compute-sanitizer's own allocations too).
int64_t device_buffer_bytes();
int64_t device_buffer_peak_bytes();
void reset_device_buffer_peak();
/// The sizes of the first 64 allocations since the last reset_device_buffer_peak(), in order: a test that finds a
/// repeated search allocating names what it allocated.
std::vector<int64_t> device_allocations_since_reset();

/// How bulk host -> device uploads (Index::add of host rows, pipeline/upload.cuh) are cut, to measure them
/// (gknn_upload_bench): the largest chunk in bytes and the number of pinned slots (0: the defaults, 16 MiB and 4),
/// pinned slots allocated write-combined (the host only writes them; off by default), and the ramp of small chunks
/// at either end of an upload of many chunks (0: the default, 1: at its end only, 2: none). Results do not depend on
/// it.
struct UploadOverride {
  int64_t chunk_bytes = 0;
  int slots = 0;
  bool write_combined = false;
  int ramp = 0;
};
void set_upload_override(UploadOverride o);
/// Pinned slots allocated by uploads since the process started: repeated adds of the same size allocate none.
int64_t upload_pinned_allocations();
/// Whether an Index's rows come from gknn's device pool, which keeps freed blocks for the next add (buffer.cuh
/// PooledDeviceMemory): on unless GKNN_INDEX_POOL=0 (read once), so that gknn_upload_bench names what it measured.
bool index_pool_enabled();

/// Frees what the backend keeps between calls for the life of the process: the cached pipelines (streams, device
/// and pinned buffers), the device value scan's slots, the uploads' pinned slots, the idle blocks of gknn's device
/// pools (the freed Index rows they keep: release_upload_slots), the exactness guard's buffers, the sharded
/// searches' device merge buffers and the idle cuBLAS handles. At exit the CUDA runtime may already be gone, so
/// nothing frees them then, and compute-sanitizer's leak check (memcheck --leak-check full) would report them; the
/// test binaries call this before main returns (tests/testing/main.cpp, mpi_search_test), and later calls simply
/// make new ones.
void release_cached_device_resources();
/// The exactness guard's kept device buffers (pipeline/guard.cu); part of release_cached_device_resources.
void release_guard_scratch();

}  // namespace gknn::detail::cuda
