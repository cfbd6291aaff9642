// choose.cu: Auto's selection choice and the checks of an explicit one.
//
// Auto walks a preference list, fastest family first, and takes the first one this build registers
// (find_select) that serves k, after one measured rule for a single row with a large k (one_row_large_k). Families
// written later join Auto simply by registering their entries.
// Insertion is preferred over Sort only for small k: it costs O(cols * k) per row in the worst case.
#include <optional>

#include "cuda/select/select.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {
namespace {

struct Preference {
  SelectAlgorithm algorithm;
  int64_t max_k;  ///< Auto uses it only up to this k (on top of the entry's own max_k)
};

constexpr int64_t kAnyK = INT64_MAX;
constexpr Preference kPreferences[] = {
    {SelectAlgorithm::Bits, kAnyK},         {SelectAlgorithm::BlockSelect, kAnyK},
    {SelectAlgorithm::WarpSelect, kAnyK},   {SelectAlgorithm::RadixSelect, kAnyK},
    {SelectAlgorithm::SampleSelect, kAnyK}, {SelectAlgorithm::Insertion, 32},
    {SelectAlgorithm::Sort, kAnyK},
};

// One row (a single query's keys) with a large k: bits splits the row into parts that each keep k and merges them
// in levels, which at large k costs more than sorting or radix-selecting the row. H200 suite, q = 1
// (bench/results/suite_2026-11-27_h200/, every d and data kind): at k = 1000 bits took 1.3-1.9x the best selection
// on average (up to 2.35x), at k <= 100 within 8%; a whole-row sort was the fastest up to 1M keys (within 2% on
// average), radix select at 4M (sort 1.25x there).
constexpr int64_t kOneRowLargeK = 300;          // between the grid's k = 100 and k = 1000
constexpr int64_t kOneRowSortMaxCols = 1 << 21;  // between its 1M and 4M keys

/// Sort or radix select for one row with a large k (see above); none where neither serves it.
std::optional<SelectAlgorithm> one_row_large_k(int64_t rows, int64_t cols, int64_t k) {
  if (rows != 1 || k < kOneRowLargeK) return std::nullopt;
  const SelectAlgorithm a = cols <= kOneRowSortMaxCols ? SelectAlgorithm::Sort : SelectAlgorithm::RadixSelect;
  const SelectEntry* e = find_select(a);
  if (!e || k > e->max_k) return std::nullopt;
  return a;
}

}  // namespace

SelectAlgorithm choose_select(int64_t rows, int64_t cols, int64_t k, std::string* why) {
  if (const std::optional<SelectAlgorithm> a = one_row_large_k(rows, cols, k)) {
    if (why)
      *why = "auto: one row with k = " + std::to_string(k) + " >= " + std::to_string(kOneRowLargeK) + ": " +
             (*a == SelectAlgorithm::Sort ? "a whole-row sort (up to 2M keys)" : "radix select (beyond 2M keys)") +
             " (measured faster than bits there)";
    return *a;
  }
  for (const Preference& p : kPreferences) {
    const SelectEntry* e = find_select(p.algorithm);
    if (e && k <= e->max_k && k <= p.max_k) {
      if (why)
        *why = "auto: the first family of the preference list (bits, block_select, warp_select, radix_select, "
               "sample_select, insertion up to k = 32, sort) that serves k = " + std::to_string(k);
      return p.algorithm;
    }
  }
  detail::fail(ErrorCode::Unsupported, "no CUDA selection algorithm in this build serves k = ", k);
}

const SelectEntry& resolve_select(SelectAlgorithm requested, int64_t rows, int64_t cols, int64_t k, std::string* why) {
  const SelectAlgorithm a = requested == SelectAlgorithm::Auto ? choose_select(rows, cols, k, why) : requested;
  if (requested != SelectAlgorithm::Auto && why) *why = "requested";
  const SelectEntry* e = find_select(a);
  GKNN_EXPECT(e != nullptr, ErrorCode::Unsupported, "selection algorithm ", to_string(a),
              " has no CUDA implementation in this build");
  GKNN_EXPECT(k <= e->max_k, ErrorCode::Unsupported, "selection algorithm ", to_string(a), " serves k <= ", e->max_k,
              " on the cuda backend (got k = ", k, ")");
  return *e;
}

}  // namespace gknn::detail::cuda
