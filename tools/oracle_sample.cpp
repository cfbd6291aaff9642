#include "oracle_sample.hpp"

#include <algorithm>
#include <utility>

#include "cli_common.hpp"
#include "gknn/search.hpp"

namespace gknn::cli {

SampleCheck check_against_oracle(const Dataset& data, const SearchParams& params, const Result& result,
                                 int64_t count) {
  SampleCheck check;
  const int64_t queries = data.queries.rows, cols = data.queries.cols;
  check.checked = std::min(count, queries);
  if (check.checked == 0) return check;
  check.step = queries / check.checked;
  HostMatrix<float> sample(check.checked, cols);
  for (int64_t s = 0; s < check.checked; ++s)
    std::copy(data.queries.row(s * check.step), data.queries.row(s * check.step) + cols, sample.row(s));

  SearchParams oracle;
  oracle.k = params.k;
  oracle.metric = params.metric;
  oracle.p = params.p;
  oracle.threads = params.threads;
  oracle.backend = Backend::Cpu;
  oracle.distance = DistanceAlgorithm::Reference;
  Stopwatch clock;
  const Result truth = search(data.base.view(), std::as_const(sample).view(), oracle);
  check.seconds = clock.seconds();

  for (int64_t s = 0; s < check.checked; ++s) {
    const int64_t q = s * check.step;
    const auto got = result.indices.begin() + q * result.k, want = truth.indices.begin() + s * truth.k;
    if (std::equal(want, want + truth.k, got)) ++check.identical;
    else if (check.first_difference < 0) check.first_difference = q;
  }
  return check;
}

}  // namespace gknn::cli
