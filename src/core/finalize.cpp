#include "core/finalize.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include <omp.h>

#include "core/keys.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {

void restore_tie_order(const float* values, int64_t* indices, int64_t count) {
  for (int64_t begin = 0; begin < count;) {
    int64_t end = begin + 1;
    while (end < count && values[end] == values[begin]) ++end;
    std::sort(indices + begin, indices + end);
    begin = end;
  }
}

namespace {

void check_result_size(int64_t rows, int64_t k) {
  // k > n pads every row, so a huge k is a huge allocation: refuse it by name instead of a bare bad_alloc.
  GKNN_EXPECT(rows == 0 || k <= std::numeric_limits<int64_t>::max() / 12 / rows, ErrorCode::OutOfMemory,
              "a result of ", rows, " x k = ", k, " entries cannot be addressed");
}

/// Row i of the keys, in the user's form, into the destination row (host memory).
void finalize_row(const KeyResult& keys, const OutputSpec& out, const ResultView& dest, int64_t i) {
  const int64_t k = out.k, kept = std::min(k, keys.k);
  float* d = dest.distances + i * k;
  int64_t* ix = dest.indices + i * k;
  for (int64_t j = 0; j < kept; ++j) {
    const size_t from = static_cast<size_t>(i * keys.k + j);
    d[j] = key_to_value(out.metric, out.p, keys.distances[from]);
    ix[j] = keys.indices[from];
  }
  restore_tie_order(d, ix, kept);
  std::fill(d + kept, d + k, padding_value(out.metric));
  std::fill(ix + kept, ix + k, int64_t(-1));
  if (out.ids)
    for (int64_t j = 0; j < kept; ++j) ix[j] = out.ids[ix[j]];
}

}  // namespace

void finalize_into(const KeyResult& keys, const OutputSpec& out, int threads) {
  check_result_size(keys.rows, out.k);
  const ResultView dest = out.destination();
  GKNN_EXPECT(dest.memory == Memory::Host, ErrorCode::Unsupported,
              "device-memory results need the cuda backend (this search ran on the cpu backend)");
  const int64_t rows = keys.rows;
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads()) if (rows > 64)
  for (int64_t i = 0; i < rows; ++i) finalize_row(keys, out, dest, i);
}

Result allocate_result(int64_t rows, int64_t k) {
  check_result_size(rows, k);
  Result r;
  r.rows = rows;
  r.k = k;
  try {
    r.distances.resize(static_cast<size_t>(rows * k));
    r.indices.resize(static_cast<size_t>(rows * k));
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::OutOfMemory, "a result of ", rows, " x k = ", k, " entries (", rows * k * 12,
         " bytes) does not fit in host memory; lower k");
  }
  return r;
}

ResultView view_of(Result& r) {
  return ResultView{r.distances.data(), r.indices.data(), r.rows, r.k, Memory::Host};
}

Result finalize(KeyResult keys, Metric metric, double p, int64_t k) {
  OutputSpec spec;
  spec.metric = metric;
  spec.p = p;
  spec.k = k;
  if (keys.k == k) {
    // Same shape: each entry becomes its value where it is (finalize_row reads entry j of a row before it writes
    // it, and sorts tie runs of what it wrote), so no second result is allocated and filled.
    spec.destination = [&keys] { return view_of(keys); };
    finalize_into(keys, spec, 0);
    return keys;
  }
  Result out = allocate_result(keys.rows, k);
  spec.destination = [&out] { return view_of(out); };
  finalize_into(keys, spec, 0);
  return out;
}

KeyResult search_keys(const ResidentStore& store, FloatView queries, const SearchParams& key_params,
                      const ValueStats& query_stats) {
  // Keys come out unchanged through a squared-L2 "finalisation" (the identity on keys), k = the key k, no ids.
  KeyResult keys;
  keys.rows = queries.rows;
  keys.k = key_params.k;
  OutputSpec spec;
  spec.metric = Metric::SquaredL2;
  spec.k = key_params.k;
  spec.destination = [&keys, &queries, &key_params] {
    keys = allocate_result(queries.rows, key_params.k);
    return view_of(keys);
  };
  if (queries.rows > 0) store.search_into(queries, key_params, query_stats, spec);
  return keys;
}

SearchParams key_params(const SearchParams& params, int64_t n) {
  SearchParams kp = params;
  kp.metric = key_metric(params.metric);
  kp.k = std::min(params.k, n);
  return kp;
}

}  // namespace gknn::detail
