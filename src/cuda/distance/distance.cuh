// distance.cuh: the contract of every GPU distance kernel, and the table that maps the enum to them.
//
// A distance kernel writes the nq x nb matrix of *keys* (core/keys.hpp): squared L2, -(x.y), L1, Linf or
// sum |x-y|^p, for queries and base rows already on the device. A GEMM kernel may leave out the |q|^2 term of
// squared L2 (a constant per query row, so it changes no ranking): its keys are |x|^2 - 2 q.x and the finaliser
// adds |q|^2 (DistanceEntry::omits_query_norm). Adding a kernel: a line in gknn/algorithms.def and a folder under
// distance/ with the kernel and its entries.inc (see registry.cu, docs/architecture.md).
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "core/backend.hpp"
#include "cuda/common/buffer.cuh"
#include "gknn/types.hpp"

namespace gknn::detail::cuda {

/// A resident base's operands in a fused kernel's own layout (e.g. 8-bit rows padded to 32..256 bytes), kept
/// between searches so that a search of a base that did not change converts only its queries. The owner (the
/// Index's store) invalidates it whenever the base changes; the pipeline sizes it for the whole base
/// (DistanceEntry::fused_operand_bytes) where that fits the memory budget; the kernel fills it, a prefix of the
/// base's rows at a time (the base tiles of the first search, in order), and starts again when the data need
/// another layout (queries with negative values after 8-bit unsigned ones, say). From gknn's device pool, as the
/// store's rows (common/buffer.cuh PooledDeviceBuffer): the next Index's first search gets a freed one's block back.
struct OperandCache {
  PooledDeviceBuffer<unsigned char> bytes;
  int layout = -1;   ///< the kernel's layout of the content; -1: nothing valid
  int64_t rows = 0;  ///< base rows [0, rows) are converted
  void invalidate() {
    layout = -1;
    rows = 0;
  }
};

struct DataFacts;

struct DistanceInput {
  const float* queries = nullptr;
  int64_t query_stride = 0;
  int64_t nq = 0;
  const float* base = nullptr;
  int64_t base_stride = 0;
  int64_t nb = 0;
  int64_t dim = 0;
  Metric metric = Metric::SquaredL2;  ///< a key metric: SquaredL2, InnerProduct, L1, Linf, Lp
  float p = 2.f;
  const float* query_norms = nullptr;  ///< squared norms (SquaredL2 only; filled by the pipeline when needs_norms)
  const float* base_norms = nullptr;
  /// garcia_texture: the linear-texture limit (elements) to assume instead of the device's; 0 = the device's. Set
  /// by the pipeline from a test hook, so that no kernel reads a process-wide setting.
  int64_t texture_limit = 0;
  /// Fused kernels only: a kept operand copy of the whole base, sized by the pipeline for it; `base` is then row
  /// `base_row0` of that base (the tile's offset). Null: the kernel converts the tile into its scratch.
  OperandCache* base_cache = nullptr;
  int64_t base_row0 = 0;
  /// What the search's data allow (set by the pipeline): a kernel that packs integer data reads their range here.
  const DataFacts* facts = nullptr;
};

struct DistanceOutput {
  float* keys = nullptr;
  int64_t stride = 0;  ///< >= nb
};

struct DistanceContext {
  Workspace& workspace;
  cudaStream_t stream;
  int device;
  /// Incremented by a kernel that computed the call with its fallback instead (garcia_texture beyond the texture
  /// limits); the pipeline reports the count. May be null.
  int64_t* fallbacks = nullptr;
};

/// Which key metrics an entry serves (DistanceEntry::supports): every key metric, or the GEMM decomposition's.
inline bool any_key_metric(Metric m) {
  return m == Metric::SquaredL2 || m == Metric::InnerProduct || m == Metric::L1 || m == Metric::Linf ||
         m == Metric::Lp;
}
inline bool gemm_key_metric(Metric m) { return m == Metric::SquaredL2 || m == Metric::InnerProduct; }

using DistanceFn = void (*)(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);

/// Device scratch bytes of one call on an nq x nb tile (for memory planning); may over-estimate.
using DistanceWorkspaceFn = size_t (*)(int64_t nq, int64_t nb, int64_t dim);

/// What a search's data allow: the value facts of base and queries together (core/backend.hpp) and the dimension.
struct DataFacts {
  detail::ValueStats values;
  int64_t dim = 0;
  /// Device bytes a kept operand copy of the base may take (OperandCache; the pipeline sets it for a base that
  /// stays on the device between searches, an Index's): a search of a kept base converts only its queries, which
  /// makes the fused kernel pay for few queries. 0: no copy is kept (a one-shot search, too little memory).
  size_t keep_bytes = 0;
  /// The search's keys go through the exactness guard (SearchParams::guard not Off): a lower-precision path whose
  /// candidates are re-ranked on float64 keys is as exact as fp32, so Auto may take the tf32 path for float data.
  bool guarded = false;
};

/// Where a fused distance+selection entry writes one base tile's sorted top-k lists (see DistanceEntry::fused).
struct FusedTarget {
  float* keys;             ///< the tile's list: k sorted keys per query row, `stride` apart
  int64_t* labels;
  int64_t stride;
  int64_t label_offset;    ///< added to the base row index within the tile
  /// The kernel may merge the splits' lists itself where that is cheaper (few queries); off: it leaves them to the
  /// caller's selection (set_fused_split_merge_enabled, for tests and benchmarks).
  bool merge_splits = true;
};
/// What a fused call left: the lists in the target (direct), or the splits' lists, `cols` sorted entries per row
/// (`stride` apart, labels beside them; in the call's workspace, valid until its next use), of which the caller
/// selects the k best. A search the fused kernel serves needs no key matrix (the pipeline sizes none).
struct FusedResult {
  bool direct = true;
  const float* keys = nullptr;
  const int64_t* labels = nullptr;
  int64_t stride = 0, cols = 0;
};
/// Whether the fused kernel serves this k, dimension and data (else the entry's `run` is the two-stage path).
using FusedServesFn = bool (*)(int64_t k, int64_t dim, const DataFacts& facts);
using FusedFn = FusedResult (*)(const DistanceInput& in, const DataFacts& facts, int64_t k, const FusedTarget& target,
                                const DistanceContext& ctx);
/// Device bytes of the fused kernel's operand copy of `rows` base rows (OperandCache) on these data.
using FusedOperandBytesFn = size_t (*)(int64_t rows, int64_t dim, const DataFacts& facts);

struct DistanceEntry {
  DistanceAlgorithm algorithm;
  bool (*supports)(Metric key_metric);
  bool needs_norms;       ///< the pipeline provides squared row norms for SquaredL2
  bool omits_query_norm;  ///< squared L2 keys are |x|^2 - 2 q.x; the finaliser adds |q|^2
  DistanceFn run;
  DistanceWorkspaceFn workspace_bytes;  ///< null: no scratch
  /// Null for kernels exact to float32 on any data; else true only for data on which this lower-precision kernel
  /// is proven exact (it is refused on other data, and Auto takes it only there).
  bool (*exact_on)(const DataFacts& facts);
  /// Non-null for a fused distance+selection entry: computes a base tile's top-k lists itself where `fused_serves`
  /// says so (the pipeline then skips the key matrix and the selection); elsewhere `run` is its two-stage path.
  FusedServesFn fused_serves;
  FusedFn fused;
  FusedOperandBytesFn fused_operand_bytes;  ///< with `fused`: the size of a kept operand copy (OperandCache)

  /// Whether this entry keeps each query's top k itself for this k, dimension and data (a fused entry where it
  /// serves them): no key matrix, no selection stage (run_search per base tile, explain_search's `selects_itself`).
  bool selects_itself(int64_t k, int64_t dim, const DataFacts& facts) const {
    return fused && fused_serves(k, dim, facts);
  }
};

const DistanceEntry* find_distance(DistanceAlgorithm algorithm);
/// The registered entries (registry.cu), in table order.
const DistanceEntry* distance_entries_begin();
const DistanceEntry* distance_entries_end();
/// Auto's choice for a shape, key metric and data.
/// Auto's choice for a shape, key metric and data; `why`, when given, gets the reason (explain_search).
DistanceAlgorithm choose_distance(Metric key_metric, int64_t nq, int64_t nb, int64_t k, const DataFacts& facts,
                                  std::string* why = nullptr);
/// Resolves Auto, checks support (metric, and data for lower-precision kernels); throws Unsupported naming the
/// algorithm and the reason otherwise.
const DistanceEntry& resolve_distance(DistanceAlgorithm requested, Metric key_metric, int64_t nq, int64_t nb,
                                      int64_t k, const DataFacts& facts, std::string* why = nullptr);

/// Squared L2 norm of each row (one pass; used by GEMM-based kernels).
void row_squared_norms(const float* rows, int64_t count, int64_t stride, int64_t dim, float* out, cudaStream_t s);

}  // namespace gknn::detail::cuda
