// registry.cu: SelectAlgorithm -> GPU implementation. Each family folder holds an entries.inc with one line per
// algorithm, GKNN_SELECT_ENTRY(Id, max_k, fn), naming the enum value (gknn/algorithms.def), the largest k served
// and the prefix of its fn_run/fn_workspace functions. src/CMakeLists.txt gathers every select/*/entries.inc into
// all_entries.inc, so a new folder is registered without editing a list here.
#include <cstdint>
#include <iterator>

#include "cuda/select/families.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {
namespace {

const SelectEntry kSelectEntries[] = {
#define GKNN_SELECT_ENTRY(id, max_k, fn) {SelectAlgorithm::id, max_k, fn##_run, fn##_workspace},
#include "cuda/select/all_entries.inc"
#undef GKNN_SELECT_ENTRY
    {SelectAlgorithm::Auto, 0, nullptr, nullptr},  // sentinel: keeps the array non-empty
};

}  // namespace

const SelectEntry* find_select(SelectAlgorithm algorithm) {
  for (const SelectEntry& e : kSelectEntries)
    if (e.algorithm == algorithm && e.run) return &e;
  return nullptr;
}

const SelectEntry* select_entries_begin() { return std::begin(kSelectEntries); }
const SelectEntry* select_entries_end() { return std::end(kSelectEntries) - 1; }

}  // namespace gknn::detail::cuda
