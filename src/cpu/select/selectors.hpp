// selectors.hpp: picks the selector class for a SelectAlgorithm once per call (not per key), and sizes it.
//
// Every selector has the same shape: Selector(k, expected_count), reset(), push(keys, count, index_of),
// finish(keys, indices) -> kept. The hot loop push() is a template, so dispatch happens outside it.
#pragma once

#include <type_traits>

#include "cpu/select/heap.hpp"
#include "cpu/select/quickselect.hpp"
#include "cpu/select/sort.hpp"
#include "gknn/error.hpp"
#include "gknn/types.hpp"

namespace gknn::detail::cpu {

/// Calls f(std::type_identity<Selector>{}) for a resolved CPU algorithm (Sort, Heap or Quickselect).
template <class F>
decltype(auto) with_selector(SelectAlgorithm algorithm, F&& f) {
  switch (algorithm) {
    case SelectAlgorithm::Sort:
      return f(std::type_identity<SortSelector>{});
    case SelectAlgorithm::Heap:
      return f(std::type_identity<HeapSelector>{});
    case SelectAlgorithm::Quickselect:
      return f(std::type_identity<QuickselectSelector>{});
    default:
      fail(ErrorCode::Internal, "cpu selector dispatch reached with unresolved algorithm ", to_string(algorithm));
  }
}

/// Bytes of selection state one query holds while `expected_count` keys stream through it.
inline int64_t selector_bytes(SelectAlgorithm algorithm, int64_t k, int64_t expected_count) {
  const int64_t entry = static_cast<int64_t>(sizeof(Candidate));
  switch (algorithm) {
    case SelectAlgorithm::Sort:
      return entry * expected_count;
    case SelectAlgorithm::Quickselect:
      return entry * QuickselectSelector::capacity(k);
    default:
      return entry * k;
  }
}

}  // namespace gknn::detail::cpu
