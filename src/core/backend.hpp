// backend.hpp: the contract between the core (validation, metric rewriting, padding) and each backend.
//
// The core hands a backend only validated input in key form (keys.hpp): finite float32 rows, equal
// dimensions, 1 <= k <= n, metric in {SquaredL2, InnerProduct, L1, Linf, Lp}, cosine rows pre-normalised.
// A backend returns q x k ascending keys with base-row indices, sorted in the total order (order.hpp).
// Each backend resolves Auto and rejects algorithms it does not have with ErrorCode::Unsupported.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "gknn/types.hpp"

namespace gknn::detail {

/// Keys of search(): same shape as Result.
using KeyResult = Result;

/// Facts about the values of one input, gathered in the validation pass (no second pass over the data): they
/// let a backend prove a lower-precision path exact (integers small enough for fp16 tensor cores).
struct ValueStats {
  bool integral = true;     ///< every value is an integer
  bool nonnegative = true;  ///< every value is >= 0
  float max_abs = 0.f;      ///< largest |value|
  bool known = true;        ///< false for device inputs the host did not scan
  /// Combines the stats of two parts of one set of rows.
  ValueStats merged(const ValueStats& o) const {
    return {integral && o.integral, nonnegative && o.nonnegative, max_abs > o.max_abs ? max_abs : o.max_abs,
            known && o.known};
  }
};

/// The exactness guard's certificate (guard.hpp, rerank.hpp) taken where the base lives, inside a search
/// (OutputSpec::certificate; the cuda backend): the search's key k is K' candidates per query; each query's
/// candidates are re-ranked on float64 keys, its top `k` written through the OutputSpec (the float64 keys rounded
/// to float, then the user's form) and `certified` says whether the certificate holds for it. A backend that cannot (the CPU
/// one, a base streamed from the host, K' beyond kMaxCandidates) leaves `ran` false and writes nothing.
struct DeviceCertificate {
  static constexpr int64_t kMaxCandidates = 4096;
  int64_t k = 0;             ///< the certified k (<= the search's K')
  double input_error = 0;    ///< KeyErrorBound of the distance path
  int64_t terms = 0;
  double exact_below = 0;     ///< KeyErrorBound::exact_below: computed keys smaller in magnitude are the exact keys
  double max_base_norm = -1;  ///< largest Euclidean base norm; < 0: the backend computes it from the rows
  /// Set: the k entries' float64 keys (+inf padding) and their rows (-1 padding) also come back, in float64 order,
  /// into the host arrays (queries x k each) it gives, asked for once the search is done (the caller's result may
  /// be made during it). Lists of several searches (the shards of a ShardedIndex, MPI ranks) merge in one device's
  /// order only on these keys, and the user's form written through the OutputSpec orders rows whose keys round to
  /// one float by index instead. They stay on the device to the search's end (16 bytes a query and entry): a search
  /// where they would take over a quarter of its memory leaves `ran` false.
  struct ExactInto {
    double* keys = nullptr;
    int64_t* rows = nullptr;
  };
  std::function<ExactInto()> exact_into;
  // Filled by the backend:
  bool ran = false;
  std::vector<unsigned char> certified;  ///< per query
};

/// Where and how a backend writes the user's result (values in the user's metric, k > n padding, user ids).
struct OutputSpec {
  Metric metric = Metric::SquaredL2;  ///< the user's metric (keys are converted to its values)
  double p = 2.0;
  int64_t k = 0;                      ///< the user's k (>= the key k; the excess is padding)
  const int64_t* ids = nullptr;       ///< host array: index -> user id (Index::add_with_ids), or null
  int64_t id_count = 0;
  Memory memory = Memory::Host;       ///< where destination() points
  /// The destination, asked for once, as late as possible: a Result's vectors are allocated (and their pages
  /// touched) while the device already computes.
  std::function<ResultView()> destination;
  DeviceCertificate* certificate = nullptr;  ///< the guard's certificate taken in the search, when set
};

class ResidentStore;
/// The keys of a store's search (key form, k = key_params.k, not finalised): for merging several stores' lists
/// (sharded and distributed search) before one finalisation.
KeyResult search_keys(const ResidentStore& store, FloatView queries, const SearchParams& key_params,
                      const ValueStats& query_stats);

/// The distance and selection `backend` would run for these key params, with the reasons (cpu::explain or
/// cuda::explain): explain_search and the exactness guard's decision read the same choice.
void explain_on(Backend backend, const SearchParams& key_params, int64_t nq, int64_t nb, int64_t dim,
                const ValueStats& facts, SearchPlan& plan);

/// Writes key results into the destination in the user's form, on `threads` threads (0 = all): key -> value,
/// ties re-ordered by index, padding, ids. The host finaliser of the CPU backend and of select_k.
void finalize_into(const KeyResult& keys, const OutputSpec& out, int threads);

/// A database kept by a backend between searches (the Index's storage).
class ResidentStore {
 public:
  virtual ~ResidentStore() = default;
  virtual void append(FloatView rows, const ValueStats& stats) = 0;  ///< already validated and in key form
  /// Appends rows whose values were not scanned yet (shape valid, the store's dimension, key form): scans them as
  /// validate_matrix does (the same facts, the same NaN/Inf error naming `what`, nothing stored on error) and
  /// returns their facts. By default the scan comes first (index.cpp); the CUDA store scans host rows on the device
  /// after their upload, which saves the host a pass over them (issue 12: uploads).
  virtual ValueStats append_unscanned(FloatView rows, std::string_view what);
  /// Appends host 8-bit rows (shape valid, the store's dimension) as floats; returns the facts of those floats. By
  /// default converted on the host (index.cpp); the CUDA store uploads the bytes (a quarter of the floats' bytes)
  /// and converts them on the device.
  virtual ValueStats append_bytes(ByteView rows, std::string_view what);
  virtual void clear() = 0;
  virtual int64_t size() const = 0;
  /// Searches and writes the final result through `out`.
  virtual void search_into(FloatView queries, const SearchParams& key_params, const ValueStats& query_stats,
                           const OutputSpec& out) const = 0;
  /// The value facts of every stored row (merged over the appends).
  virtual ValueStats facts() const = 0;
  // What the exactness guard (guard.hpp) asks of the rows where they are:
  /// exact[i * K' + j] = float64 key of (row i of host `queries`, stored row candidates.index(i, j)); host work on
  /// `threads` threads (SearchParams::threads).
  virtual std::vector<double> exact_keys(FloatView queries, const KeyResult& candidates, Metric key_metric, double p,
                                         int threads) const = 0;
  /// Largest Euclidean norm of a stored row (an upper bound within float32 rounding).
  virtual double max_row_norm() const = 0;
};

namespace cpu {
KeyResult search(FloatView base, FloatView queries, const SearchParams& key_params);
/// Ascending select over rows; labels may be null (column index is the label).
Result select_k(FloatView keys, const int64_t* labels, int64_t k, const SelectParams& params);
std::unique_ptr<ResidentStore> make_store(int64_t dim);
std::vector<DistanceAlgorithm> distance_algorithms(Metric user_metric);
std::vector<SelectCapability> select_algorithms();
/// The distance and selection a search with these key params would run, with the reasons (explain_search).
void explain(const SearchParams& key_params, int64_t nq, int64_t nb, int64_t dim, const ValueStats& facts,
             SearchPlan& plan);
}  // namespace cpu

namespace cuda {
/// False when built without CUDA or when no device is visible.
bool available();
/// The value facts of a device view, scanned on the device its memory belongs to (one reduction, then one small
/// copy); throws as the host scan does for NaN and Inf (validate.hpp), and InvalidArgument when the pointer is not
/// device-accessible memory. Facts unknown (known = false) without CUDA or a visible device: the search then
/// fails with the backend's error.
ValueStats device_value_stats(FloatView m, std::string_view what);
/// The search with its result finalised on the device and written to out (host or device destination).
void search_into(FloatView base, FloatView queries, const SearchParams& key_params, const ValueStats& base_stats,
                 const ValueStats& query_stats, const OutputSpec& out);
/// select_k of `values` (host or device view; labels in the same memory, same stride, or null) written through
/// `out` (host or device destination, out.k >= k, the excess padded), finalised on the device. Ascending keys
/// unless `negate`: then the rows are negated on the device first (Descending; out.metric converts back).
/// 1 <= k <= cols; NaN already rejected.
void select_into(FloatView values, const int64_t* labels, int64_t k, bool negate, const SelectParams& params,
                 const OutputSpec& out);
/// Throws InvalidArgument naming the first NaN (row, column) of a device view, as the host check of select_k
/// does (validate.hpp reject_nan_row); nothing without CUDA.
void device_reject_nan(FloatView m, std::string_view what);
// The exactness guard's primitives for rows in device memory (guard.hpp):
/// The rows of a device view, contiguous in host memory.
std::vector<float> download_rows(FloatView rows);
/// exact[i * K' + j] = float64 key of (row i of host `queries`, row candidates.index(i, j) of the device view
/// `base`), computed on the device `base` lives on; any value where the index is -1.
std::vector<double> exact_keys(FloatView base, FloatView queries, const KeyResult& candidates, Metric key_metric,
                               double p);
/// Largest Euclidean norm of a device view's rows.
double max_row_norm(FloatView rows);
/// Copies a host result (rows x k) into a device destination of the same shape.
void upload_result(const Result& result, const ResultView& dest);
/// Copies row i of a host result (k = dest.k) into row rows[i] of a device destination.
void scatter_rows(const Result& part, const std::vector<int64_t>& rows, const ResultView& dest);
std::unique_ptr<ResidentStore> make_store(int64_t dim, int device);
/// One part of a device-side merge of key lists (DeviceListMerge): the device its lists are written on, their
/// length k (entries a row, key form, no padding) and how its local row indices become global ones: segment i maps
/// local rows from local_begin[i] (ascending, the first 0) to global rows from global_begin[i] (GlobalRows).
struct DeviceListPart {
  int device = 0;
  int64_t k = 0;
  std::vector<int64_t> local_begin, global_begin;
};
/// The key lists of several searches (the shards of a ShardedIndex on CUDA devices) written on their devices and
/// merged on the first part's device: the other parts' lists cross by peer copies (NVLink where there is one), the
/// merge is the device merge of two sorted lists, and one q x k download brings the result to a page-locked host
/// result. No part's lists come to the host, and the host merges nothing (10k x 100 from two H200s: 1.2 ms of host
/// merge and a copy-out before). Made before the searches: part(s) is search s's device destination.
class DeviceListMerge {
 public:
  virtual ~DeviceListMerge() = default;
  /// Where search s writes its rows x parts[s].k key lists (device memory of parts[s].device).
  virtual ResultView part(int s) const = 0;
  /// Every part written (their searches returned): the rows x k merged keys with global indices, on the host.
  virtual KeyResult merge() = 0;
};
/// The merge of `parts` for `rows` queries into k a row (k <= the parts' k summed), or null where it cannot serve:
/// no CUDA, switched off (hooks.hpp set_device_list_merge_enabled, GKNN_DEVICE_LIST_MERGE=0), or its buffers would
/// take more than an eighth of a device's free memory (the searches' tiles need it more; the host merges then).
std::unique_ptr<DeviceListMerge> device_list_merge(const std::vector<DeviceListPart>& parts, int64_t rows,
                                                   int64_t k);
/// What another process of the host needs to read a process's exported lists (ProcessListMerge): an opaque CUDA IPC
/// handle of the buffer and where the lists lie in it. Trivially copyable (sent as bytes by MPI).
struct ExportedLists {
  std::array<unsigned char, 64> handle{};  ///< cudaIpcMemHandle_t of the buffer
  int64_t capacity = 0;                    ///< entries the buffer holds (the row indices start after that many keys)
  int64_t rows = 0, k = 0;                 ///< the lists: rows x k keys, then rows x k row indices
  int64_t generation = 0;                  ///< the buffer's allocation, counted by its process (a grown one is new)
};
/// The key lists of the processes of one host (gknn::mpi's ranks, a CUDA device each) merged on one of them: each
/// writes its search's lists into a buffer of its own that the others may map (CUDA IPC), makes their rows global
/// there and publishes it; the merging process maps the others' buffers (once, kept until close_imports), copies them
/// to its device (NVLink between two H200s) and folds them in with the device merge, as DeviceListMerge does for the
/// shards of one process. Before a process grows or frees its buffer, every process that mapped it must have closed
/// it (close_imports): the caller keeps that order with its collectives.
class ProcessListMerge {
 public:
  virtual ~ProcessListMerge() = default;
  /// Whether own(.., rows, k) would allocate a new buffer (one that others must not have mapped).
  virtual bool must_grow(int64_t rows, int64_t k) const = 0;
  /// Where this process's search writes rows x k key lists on `device` (always the same device), or nothing where
  /// the buffer would take more than a device's share for merges or cannot be had (the host merges then).
  virtual std::optional<ResultView> own(int device, int64_t rows, int64_t k) = 0;
  /// The own lists' local rows made global through segments (as DeviceListPart's), all work done: their handle.
  virtual ExportedLists publish(const std::vector<int64_t>& local_begin, const std::vector<int64_t>& global_begin) = 0;
  /// The own lists (as published) on the host, for a merge that could not run on the device.
  virtual KeyResult download() = 0;
  /// The own lists merged with the others' (all rows x their k) into rows x k on this process's device, on the host;
  /// nothing (nothing merged) where another's buffer cannot be mapped or the merge's buffers cannot be had.
  virtual std::optional<KeyResult> merge(const std::vector<ExportedLists>& others, int64_t k) = 0;
  /// Unmaps every other process's buffer this one mapped.
  virtual void close_imports() noexcept = 0;
};
/// A ProcessListMerge, or null where none can serve: no CUDA, or the device merge is switched off (hooks.hpp
/// set_device_list_merge_enabled, GKNN_DEVICE_LIST_MERGE=0).
std::unique_ptr<ProcessListMerge> process_list_merge();
std::vector<DistanceAlgorithm> distance_algorithms(Metric user_metric);
std::vector<SelectCapability> select_algorithms();
/// Visible devices; empty without CUDA, without a device, or when the driver reports an error.
std::vector<DeviceInfo> devices();
void explain(const SearchParams& key_params, int64_t nq, int64_t nb, int64_t dim, const ValueStats& facts,
             SearchPlan& plan);
}  // namespace cuda

}  // namespace gknn::detail
