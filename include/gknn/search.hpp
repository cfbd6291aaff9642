// gknn/search.hpp: one-shot exact k-nearest-neighbour search and k-selection.
#pragma once

#include <vector>

#include "gknn/types.hpp"

namespace gknn {

/// Exact kNN of every query row among the base rows (see types.hpp for the total order and k > n padding).
/// Throws gknn::Error naming the argument or row: k <= 0, empty base, dimension mismatch, NaN/Inf in a row,
/// p <= 0 for Lp, an algorithm the chosen backend or metric does not support.
Result search(FloatView base, FloatView queries, const SearchParams& params);
/// uint8 input (bvecs): converted to float32 exactly.
Result search(ByteView base, ByteView queries, const SearchParams& params);

struct SelectParams {
  Backend backend = Backend::Auto;
  SelectAlgorithm algorithm = SelectAlgorithm::Auto;
  SelectOptions options;
  int threads = 0;
  int device = 0;
};

/// The k smallest (Ascending) or largest (Descending) values of every row of a host matrix, sorted in the
/// library's total order. labels (optional, same shape and stride as values) replace the column index in the
/// output and in tie-breaking; when null the column index is used. k > cols pads like search. NaN is rejected.
Result select_k(FloatView values, const int64_t* labels, int64_t k, Order order,
                const SelectParams& params = {});

/// Distance algorithms `backend` implements for `metric` (Auto excluded); empty for an unavailable backend.
std::vector<DistanceAlgorithm> distance_algorithms(Backend backend, Metric metric);
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

}  // namespace gknn
