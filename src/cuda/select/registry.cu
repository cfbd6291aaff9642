// registry.cu: SelectAlgorithm -> GPU implementation. Each family contributes its lines via entries.inc, e.g.
//   {SelectAlgorithm::Insertion, 1024, insertion_run, insertion_workspace},
#include <cstdint>
#include <iterator>

#include "cuda/select/families.cuh"
#include "gknn/error.hpp"

namespace gknn::cuda_detail {
namespace {

const SelectEntry kSelectEntries[] = {
#include "cuda/select/insertion/entries.inc"
#include "cuda/select/sort/entries.inc"
#include "cuda/select/partial_bitonic/entries.inc"
#include "cuda/select/warp_select/entries.inc"
#include "cuda/select/block_select/entries.inc"
#include "cuda/select/bits/entries.inc"
#include "cuda/select/bits_global/entries.inc"
#include "cuda/select/tang/entries.inc"
#include "cuda/select/sample_select/entries.inc"
#include "cuda/select/radix_select/entries.inc"
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

}  // namespace gknn::cuda_detail
