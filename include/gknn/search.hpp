// gknn/search.hpp: one-shot exact k-nearest-neighbour search and k-selection.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gknn/types.hpp"

namespace gknn {

/// Exact kNN of every query row among the base rows (see types.hpp for the total order and k > n padding).
/// Throws gknn::Error naming the argument or row: k <= 0, empty base, dimension mismatch, NaN/Inf in a row,
/// p <= 0 for Lp, an algorithm the chosen backend or metric does not support.
Result search(FloatView base, FloatView queries, const SearchParams& params);
/// uint8 input (bvecs): converted to float32 exactly.
Result search(ByteView base, ByteView queries, const SearchParams& params);
/// The same search, written into caller-provided storage (host or device arrays; FAISS's search(n, x, k, D, I)
/// shape): no result is allocated. Inputs may be host or device views (Memory::Device needs the cuda backend).
void search(FloatView base, FloatView queries, const SearchParams& params, const ResultView& out);

struct SelectParams {
  Backend backend = Backend::Auto;
  SelectAlgorithm algorithm = SelectAlgorithm::Auto;
  SelectOptions options;
  int threads = 0;
  int device = 0;
};

/// The k smallest (Ascending) or largest (Descending) values of every row, sorted in the library's total order.
/// labels (optional, same shape and stride as values, in the same memory) replace the column index in the output
/// and in tie-breaking; when null the column index is used. k > cols pads like search. NaN is rejected (the
/// error names the first NaN's row and column). values may be a device view (Memory::Device, any row stride >=
/// cols): it is read where it is by the cuda backend (an explicit Backend::Cpu is InvalidArgument), no host copy.
Result select_k(FloatView values, const int64_t* labels, int64_t k, Order order,
                const SelectParams& params = {});
/// The same selection written into caller-provided storage (rows x k, host or device arrays; ResultView's rules).
/// A device view or a device destination runs on the cuda backend, finalised on the device.
void select_k(FloatView values, const int64_t* labels, int64_t k, Order order, const SelectParams& params,
              const ResultView& out);

/// Distance algorithms `backend` implements for `metric` (Auto excluded); empty for an unavailable backend.
std::vector<DistanceAlgorithm> distance_algorithms(Backend backend, Metric metric);
/// True for distance algorithms that compute in a precision exact only on integer data (fp16 tensor cores): a
/// backend runs them only on data it proves them exact on and refuses them (Unsupported) elsewhere; Auto takes
/// them only there.
bool distance_requires_integer_data(DistanceAlgorithm algorithm);
/// Selection algorithms `backend` implements (Auto excluded), with the largest k each serves.
struct SelectCapability {
  SelectAlgorithm algorithm;
  int64_t max_k;
};
std::vector<SelectCapability> select_algorithms(Backend backend);

/// Backends this build can run now (Cpu always; Cuda when compiled in and a device is visible).
bool backend_available(Backend backend);
/// Backends compiled into this build (Cpu always; Cuda when built with it), whether or not a device is visible.
bool backend_compiled(Backend backend);
/// What a compiled backend offers, read from its static tables without looking for a device (so a machine
/// without a GPU can list the CUDA algorithms of the build); empty for a backend not compiled in.
std::vector<DistanceAlgorithm> compiled_distance_algorithms(Backend backend, Metric metric);
std::vector<SelectCapability> compiled_select_algorithms(Backend backend);

/// The backend a search (or select_k) runs on, and why.
struct BackendChoice {
  Backend backend = Backend::Cpu;
  /// "requested", or why Auto chose it: "auto" (CUDA), "auto: no CUDA device is visible",
  /// "auto: heap has no CUDA implementation", ...
  std::string reason;
};
/// An explicit backend is taken as it is (an unavailable Cuda throws Unsupported; an algorithm it lacks is refused
/// by the search). Auto takes CUDA when a device is visible and CUDA implements every algorithm the parameters force
/// (the distance for their metric, the selection), else the CPU when it does; when neither implements the
/// combination it throws Unsupported naming what each lacks. search() and select_k() run exactly this choice.
BackendChoice choose_backend(const SearchParams& params);
BackendChoice choose_backend(const SelectParams& params);

/// What search() would run on these inputs and why (`gknn search --explain`): the backend, distance and selection
/// algorithms as Auto (or the caller's explicit choice) resolves them, each with its reason, from the very functions
/// the search itself calls. The inputs are validated as search() validates them (the value facts that decide
/// exact lower-precision paths come from that pass, on the device for device views); nothing is searched. Tile
/// sizes are chosen by the search from the free device memory (SearchStats reports them).
struct SearchPlan {
  BackendChoice backend;
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  std::string distance_reason;
  SelectAlgorithm select = SelectAlgorithm::Auto;
  std::string select_reason;
  /// The distance kernel keeps each query's top k itself (the fused kernel where it serves the search): there is no
  /// selection stage, so `select` is Auto and a selection named beside it serves nothing.
  bool selects_itself = false;
  bool guarded = false;      ///< the exactness guard re-ranks the keys (Guard)
  std::string guard_reason;  ///< why it does or does not
};
SearchPlan explain_search(FloatView base, FloatView queries, const SearchParams& params);
/// Lines "backend ...", "distance ...", "select ...", "guard ..." with the reasons.
std::string to_string(const SearchPlan& plan);

/// The measured plan table Auto consults on the CUDA backend (src/plan/plan_table.csv, or the file
/// $GKNN_PLAN_TABLE names; docs/planner.md): its header line, and one row — the fastest (distance, select) pair
/// measured for a device (a substring of its name), a metric (stored as its class: dot, l1, linf, lp), a data kind
/// and a cell (n base rows, q queries, dimension d, k). `gknn bench --sweep` writes these.
std::string_view plan_table_header();
/// Where the active plan table comes from, how many rows it has and how many name a device called `device_name`.
struct PlanTableSummary {
  std::string source;
  int64_t rows = 0;
  int64_t rows_for_device = 0;
};
PlanTableSummary plan_table_summary(std::string_view device_name);
std::string plan_table_row(std::string_view device, Metric metric, bool integer_data, int64_t n, int64_t q, int64_t d,
                           int64_t k, DistanceAlgorithm distance, SelectAlgorithm select, double ms);
/// Checks a plan table's text as Auto would read it; throws gknn::Error(Format) naming `source` and the line of the
/// first malformed row (`gknn bench --sweep --out` checks the file it adds to before the long work).
void check_plan_table(std::string_view text, const std::string& source);

}  // namespace gknn
