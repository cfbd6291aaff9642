#include "cpu/distance/reference.hpp"

#include <algorithm>
#include <vector>

#include "core/order.hpp"
#include "cpu/distance/exact.hpp"
#include "cpu/parallel.hpp"
#include "cpu/select/candidate.hpp"

namespace gknn::detail::cpu {
namespace {

struct ExactCandidate {
  double key;
  int64_t index;
};

void one_query(FloatView base, const float* query, const SearchParams& kp, std::vector<ExactCandidate>& all,
               float* keys, int64_t* indices) {
  for (int64_t i = 0; i < base.rows; ++i)
    all[size_t(i)] = {exact_key(kp.metric, kp.p, query, base.row(i), base.cols), i};
  std::sort(all.begin(), all.end(), [](const ExactCandidate& a, const ExactCandidate& b) {
    return ranks_before(a.key, a.index, b.key, b.index);
  });
  std::vector<Candidate> kept(static_cast<size_t>(kp.k));
  for (int64_t j = 0; j < kp.k; ++j) kept[size_t(j)] = {static_cast<float>(all[size_t(j)].key), all[size_t(j)].index};
  std::sort(kept.begin(), kept.end(), before);
  for (int64_t j = 0; j < kp.k; ++j) {
    keys[j] = kept[size_t(j)].key;
    indices[j] = kept[size_t(j)].index;
  }
}

}  // namespace

KeyResult reference_search(FloatView base, FloatView queries, const SearchParams& kp, int threads) {
  const int64_t q = queries.rows, k = kp.k;
  KeyResult out{q, k, std::vector<float>(static_cast<size_t>(q * k)), std::vector<int64_t>(static_cast<size_t>(q * k))};
  Progress progress(kp.progress, q);
  parallel_for(threads, q, [&](int64_t qi) {
    std::vector<ExactCandidate> all(static_cast<size_t>(base.rows));
    one_query(base, queries.row(qi), kp, all, out.distances.data() + qi * k, out.indices.data() + qi * k);
    progress.unit_done();
  });
  progress.finish();
  return out;
}

}  // namespace gknn::detail::cpu
