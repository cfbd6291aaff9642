// validate.hpp: the checks every entry point makes before a backend sees the data.
#pragma once

#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "gknn/search.hpp"
#include "gknn/types.hpp"

namespace gknn::detail {

/// Upper bound of SearchParams::threads (0 = all hardware threads).
constexpr int kMaxThreads = 4096;

/// Shape, stride and finiteness of one matrix argument; `what` names it in messages ("base", "queries").
/// Returns the facts about its values gathered in the same pass (value_facts.hpp). Device views are scanned on
/// their device (cuda::device_value_stats): the same facts and the same error for NaN and Inf.
ValueStats validate_matrix(FloatView m, std::string_view what, bool allow_empty_rows);
/// validate_matrix's checks of shape, stride and pointer alone (no value is read).
void validate_shape(FloatView m, std::string_view what, bool allow_empty_rows);
/// validate_matrix's scan of a host matrix whose shape is valid, on at most `max_parts` threads.
ValueStats scan_host_values(FloatView m, std::string_view what, int max_parts);

/// A search planned with `guess` as its queries' value facts, checked against their scanned facts (the overlapped
/// scan of Index::search): `covered` when every plan made for the guess is exact on the scanned values, and the
/// guess for the next queries.
struct FactsGuessCheck {
  bool covered;
  ValueStats next_guess;
};
FactsGuessCheck check_facts_guess(const ValueStats& guess, const ValueStats& scanned);
/// Throws InvalidArgument naming the first non-finite column of `row` (host memory), row `row_index` of `what`:
/// the message of every scan, host or device, that found a non-finite value in that row.
[[noreturn]] void reject_non_finite_row(const float* row, int64_t cols, std::string_view what, int64_t row_index);
/// Throws InvalidArgument "<what>: row <row_index> column <j> is NaN" for the first NaN of `row` (host memory):
/// select_k's message, host or device scan.
[[noreturn]] void reject_nan_row(const float* row, int64_t cols, std::string_view what, int64_t row_index);
/// Validates a search's arguments; fills the value facts of base and queries when asked.
void validate_search(FloatView base, FloatView queries, const SearchParams& params, ValueStats* base_stats = nullptr,
                     ValueStats* query_stats = nullptr);
/// A caller's result storage for rows x k: both pointers set, aligned, shaped as the search.
void validate_result_view(const ResultView& out, int64_t rows, int64_t k);
/// Backend::Auto -> Cuda when available, else Cpu; an unavailable explicit Cuda throws Unsupported.
Backend resolve_backend(Backend requested);
/// The same, and Auto passes over a backend that lacks an algorithm the parameters force (gknn::choose_backend).
Backend resolve_backend(const SearchParams& params);
Backend resolve_backend(const SelectParams& params);

/// Row-normalised copy for cosine (a zero row stays zero). Norms are accumulated in double.
std::vector<float> normalized_rows(FloatView m);

}  // namespace gknn::detail
