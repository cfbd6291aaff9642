// gknn/types.hpp: the vocabulary of the public API (views, metrics, algorithm enums, parameters, results).
//
// THE TOTAL ORDER. Every algorithm and backend returns the same neighbours in the same order:
//   * distance metrics (squared L2, L2, L1, Linf, Lp): ascending distance;
//   * similarity metrics (inner product, cosine): descending similarity;
//   * equal values are ordered by the smaller database index (the position in the base, or for an Index the
//     insertion position; user ids from add_with_ids do not take part in ordering);
//   * -0.0 and +0.0 are equal;
//   * when k > n, the missing tail of every row is padded with index -1 and distance +inf (-inf for similarities).
// EXACTNESS. The neighbours are those of the float64 oracle: ordered by the exact (float64) distance of the float32
// rows, ties by index. Lower-precision distance paths keep this promise in one of two ways: on integer data whose
// sums stay below 2^24 their keys are exact (checked from the rows' values, no second pass), and elsewhere the
// exactness guard (SearchParams::guard) re-ranks every candidate within the path's proven error bound on float64
// distances (squared L2, L2, inner product; cosine on the rows as normalised in float32). Reported values are float32; a run of equal reported values
// is ordered by index. L1, Linf and Lp keys are float32 sums, not re-ranked: on float data two rows whose exact
// distances differ by less than the float32 rounding may come out in either order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gknn/algorithms.hpp"
#include "gknn/host_array.hpp"

namespace gknn {

/// Where the memory behind a view or an output lives. Device memory is CUDA global memory of the device the
/// search runs on (SearchParams::device); only the cuda backend reads or writes it (Backend::Auto picks cuda).
enum class Memory { Host, Device };

/// Non-owning row-major matrix view. stride is in elements between row starts; 0 means "= cols".
template <class T>
struct MatrixView {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
  Memory memory = Memory::Host;  ///< Device: data is a CUDA device pointer (searched where it is, no host copy)

  int64_t row_stride() const noexcept { return stride == 0 ? cols : stride; }
  T* row(int64_t i) const noexcept { return data + i * row_stride(); }
  bool empty() const noexcept { return rows == 0 || cols == 0; }
  /// A mutable view converts to a read-only one.
  template <class U = T>
    requires(!std::is_const_v<U> && std::is_same_v<U, T>)  // only to the same element type
  operator MatrixView<const U>() const noexcept {
    return {data, rows, cols, stride, memory};
  }
};

using FloatView = MatrixView<const float>;
using ByteView = MatrixView<const uint8_t>;

enum class Metric {
  SquaredL2,     ///< sum (x-y)^2                       (default; what FAISS IndexFlatL2 returns)
  L2,            ///< sqrt(sum (x-y)^2)
  InnerProduct,  ///< sum x*y, similarity: largest first
  Cosine,        ///< x.y / (|x| |y|), similarity: largest first; a zero vector has similarity 0 to everything
  L1,            ///< sum |x-y|
  Linf,          ///< max |x-y|
  Lp,            ///< (sum |x-y|^p)^(1/p), p > 0 given in SearchParams::p
};

/// True for metrics where larger means nearer (inner product, cosine).
constexpr bool is_similarity(Metric m) noexcept { return m == Metric::InnerProduct || m == Metric::Cosine; }

enum class Backend { Auto, Cpu, Cuda };

/// The exactness guard (core/guard.hpp, docs/algorithms.md): a distance path whose float32 or TF32 keys may differ
/// from the exact distances (float data) selects k' > k candidates per query, re-ranks them on float64 distances
/// and proves, from the path's error bound, that no other row can enter the top k; queries without that proof are
/// searched again with 4 times the candidates (up to every row). The result then equals the float64 oracle's.
///   Auto    guard where the chosen path is not proven exact on the data (float data on squared L2, L2, inner
///           product and cosine); not for L1, Linf, Lp;
///   Always  guard every squared L2 / L2 / inner product / cosine search, also where the keys are exact (tests);
///   Off     the path's keys as they are (float32-level neighbours on float data; faster).
enum class Guard { Auto, Always, Off };

/// Options of Tang et al.'s queues (SelectAlgorithm::InsertionQueue/HeapQueue/MergeQueue). A full name such
/// as "merge_queue+aligned+buffered+hp" sets the algorithm and these flags at once (see parse_select).
struct TangOptions {
  bool aligned = false;       ///< whole warp merges together (per-warp flag)
  bool buffered = false;      ///< per-thread candidate buffer with local sort and early stop
  bool hierarchical = false;  ///< hierarchical partition ("hp")
  int m = 8;                  ///< merge-queue level size
  int group = 4;              ///< hierarchical partition group size G
};

/// Overrides of choices the selection algorithms make themselves (tuning sweeps, tests). Each 0 = the tuned
/// choice; none changes the result, only the path taken and its speed.
struct SelectOverrides {
  int thread_queue = 0;        ///< WarpSelect/BlockSelect thread-queue length (2..10)
  int split_parts = 0;         ///< Bits/BitsGlobal: split every row into this many segments (first level)
  int bracket_rank_shift = 0;  ///< sample/radix select: move the sampled bracket's sample ranks by this much (a
                               ///< large shift makes the bracket miss, so the fallback passes run)
};

/// Options shared by the selection algorithms.
struct SelectOptions {
  bool sorted = true;          ///< large-k selectors may skip the final sort when false (select_k only)
  bool two_stage = true;       ///< sample/radix select: two-stage (k-th value, then filter) or single-stage
  bool sampled_bracket = true; ///< sample/radix select: first one pass that keeps only the keys a sample says can
                               ///< hold the k-th (gknn, exact either way); false: the thesis' passes alone
  bool prefetch = true;        ///< bits: L2 prefetch ahead of the loads (faster on every measured shape)
  TangOptions tang;
  SelectOverrides overrides;
};

/// Progress report: fraction of the work done in [0, 1].
using ProgressCallback = std::function<void(double fraction)>;

/// Where the time of one search went (filled when SearchParams::stats is set). CUDA: device phases measured with
/// CUDA events on the search's streams (copies and kernels overlap, so the phases may add up to more than the
/// wall time); CPU: wall-clock phases. total_ms is always the wall time of the whole call, measured on the host.
struct SearchStats {
  double upload_ms = 0;    ///< host -> device copies of queries (and of the base when it is not resident)
  double distance_ms = 0;  ///< distance computation (device time on CUDA)
  double select_ms = 0;    ///< k-selection
  double merge_ms = 0;     ///< merging tile top-k lists
  double download_ms = 0;  ///< device -> host copies of the results
  double finalize_ms = 0;  ///< key -> value conversion, tie order, padding, ids (device kernel on CUDA)
  double device_ms = 0;    ///< CUDA: first upload to last download on the device (events); CPU: 0
  double total_ms = 0;     ///< wall time of the call
  // Host work outside the device span (where a search's wall exceeds device_ms):
  double check_ms = 0;  ///< argument checks and the scan of the queries' values (finite; facts for exact paths)
  double setup_ms = 0;  ///< CUDA: choices, tiling plan and buffers before the first device work is queued
  // Host work inside the device span (CUDA; the device may wait for it):
  double pack_ms = 0;      ///< query tiles (and a streamed base's tiles) packed into pinned slots, before their copies
  double copy_out_ms = 0;  ///< finalised tiles copied from pinned slots into a host result, after their downloads
  int64_t query_tiles = 0;
  int64_t base_tiles = 0;  ///< base tiles per query tile
  // The exactness guard (Guard), when it ran: the phases above are its first candidate pass.
  int64_t guard_candidates = 0;  ///< candidates per query of the first pass (k' > k)
  double rerank_ms = 0;          ///< exact float64 keys of the candidates, certificates, later passes (wall time)
  int64_t guard_retried = 0;     ///< queries searched again with more candidates (no certificate)
  /// Query rows of the guard's passes re-ranked and certified on the device, in the search (cuda: the base on the
  /// device); the others went through a host re-rank (only their candidates' float64 keys on the device).
  int64_t guard_device_rows = 0;
  // What ran, Auto resolved (the guard's first pass where it ran): the distance algorithm, and the selection of the
  // last tile (Auto where the distance kept each query's top k itself: the fused kernel). A search through an Index
  // may choose otherwise than explain_search's one-shot plan (a kept operand copy of its base: the fused kernel).
  DistanceAlgorithm distance_algorithm = DistanceAlgorithm::Auto;
  SelectAlgorithm select_algorithm = SelectAlgorithm::Auto;
};

struct SearchParams {
  int64_t k = 10;
  Metric metric = Metric::SquaredL2;
  double p = 2.0;  ///< exponent of Metric::Lp, p > 0
  Backend backend = Backend::Auto;
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  SelectAlgorithm select = SelectAlgorithm::Auto;
  SelectOptions select_options;
  /// Bytes of working memory (device memory for cuda); 0 = automatic: cuda plans from the free device memory, and
  /// a one-shot search (gknn::search) plans its tiles within the 1 GiB its cached buffers may keep, so that the
  /// next call allocates nothing.
  size_t memory_budget = 0;
  Guard guard = Guard::Auto;  ///< re-ranking of inexact keys (see Guard)
  int threads = 0;           ///< cpu threads; 0 = all hardware threads (within the process's CPU quota)
  int device = 0;            ///< cuda device ordinal
  ProgressCallback progress;
  SearchStats* stats = nullptr;  ///< when set, filled with the phase times of the search (see SearchStats)
};

/// q x k row-major result: distances (or similarities) and int64 indices (or user ids). The arrays are
/// HostArrays (host_array.hpp): std::vector's interface, comparable with and convertible to std::vector, but a
/// search allocates them without value-initialising what it is about to overwrite.
struct Result {
  int64_t rows = 0;
  int64_t k = 0;
  HostArray<float> distances;
  HostArray<int64_t> indices;

  float distance(int64_t row, int64_t j) const { return distances[static_cast<size_t>(row * k + j)]; }
  int64_t index(int64_t row, int64_t j) const { return indices[static_cast<size_t>(row * k + j)]; }
};

/// Caller-provided storage for a rows x k result: two contiguous row-major arrays (distances or similarities,
/// and int64 indices or user ids), both in host memory or both in device memory. The search writes every entry
/// exactly once (k > n padding included) and nothing else; rows and k must equal the search's, else
/// InvalidArgument. Host arrays must be aligned for their element type.
struct ResultView {
  float* distances = nullptr;
  int64_t* indices = nullptr;
  int64_t rows = 0;
  int64_t k = 0;
  Memory memory = Memory::Host;
};

/// Order of select_k: Ascending keeps the smallest values, Descending the largest.
enum class Order { Ascending, Descending };

// Names used by the CLI, the benchmarks and error messages ("squared_l2", "cublas", "merge_queue", ...).
std::string to_string(Metric m);
std::string to_string(Backend b);
std::string to_string(DistanceAlgorithm a);
std::string to_string(SelectAlgorithm a);
std::string to_string(Guard g);
/// Full name of a selection with its Tang flags, e.g. "merge_queue+aligned+hp".
std::string select_name(SelectAlgorithm a, const TangOptions& tang);

/// Parsers throw gknn::Error(InvalidArgument) naming the accepted values.
Metric parse_metric(std::string_view name);
Backend parse_backend(std::string_view name);
DistanceAlgorithm parse_distance(std::string_view name);
Guard parse_guard(std::string_view name);
/// Accepts "name" or "name+flag+flag" with flags aligned, buffered, hp (Tang queues only).
SelectAlgorithm parse_select(std::string_view name, TangOptions* tang = nullptr);

std::vector<DistanceAlgorithm> all_distance_algorithms();
std::vector<SelectAlgorithm> all_select_algorithms();

}  // namespace gknn
