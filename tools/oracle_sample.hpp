// oracle_sample.hpp: a search checked against the float64 CPU reference on a fixed sample of its queries, for data
// too large to compute the whole ground truth on the CPU (SIFT1M: 10,000 queries x 1,000,000 vectors).
#pragma once

#include <cstdint>

#include "gknn/types.hpp"
#include "search_setup.hpp"

namespace gknn::cli {

struct SampleCheck {
  int64_t checked = 0;     ///< queries in the sample
  int64_t step = 1;        ///< the sample is queries 0, step, 2 step, ...
  int64_t identical = 0;   ///< of them, with exactly the reference's ids in the reference's order
  int64_t first_difference = -1;  ///< query index of the first that differs, -1 when none
  double seconds = 0;      ///< time of the reference search
};

/// Compares the ids of `result` (a search of data.queries with `params`) with the float64 CPU reference on `count`
/// evenly spaced queries (always the same ones for the same data). Ids must be identical only where float32
/// distances are exact (integer data such as SIFT's); elsewhere near-ties may legitimately differ.
SampleCheck check_against_oracle(const Dataset& data, const SearchParams& params, const Result& result,
                                 int64_t count);

}  // namespace gknn::cli
