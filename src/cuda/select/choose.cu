// choose.cu: Auto's selection choice and the checks of an explicit one.
//
// Auto walks a preference list, fastest family first, and takes the first one this build registers
// (find_select) that serves k. Families written later join Auto simply by registering their entries.
// Insertion is preferred over Sort only for small k: it costs O(cols * k) per row in the worst case.
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

}  // namespace

SelectAlgorithm choose_select(int64_t /*rows*/, int64_t /*cols*/, int64_t k, std::string* why) {
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
