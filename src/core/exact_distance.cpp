// exact_distance.cpp: gknn::exact_distance (gknn/recall.hpp), the float64 oracle for one pair of vectors.
#include <vector>

#include "core/keys.hpp"
#include "core/validate.hpp"
#include "cpu/distance/exact.hpp"
#include "gknn/recall.hpp"

namespace gknn {

float exact_distance(const float* a, const float* b, int64_t dim, Metric metric, double p) {
  if (metric != Metric::Cosine)
    return detail::key_to_value(metric, p,
                                static_cast<float>(detail::cpu::exact_key(detail::key_metric(metric), p, a, b, dim)));
  // Cosine is the inner product of normalised rows (a zero row stays zero: similarity 0), as in search().
  const std::vector<float> an = detail::normalized_rows(FloatView{a, 1, dim, 0});
  const std::vector<float> bn = detail::normalized_rows(FloatView{b, 1, dim, 0});
  return detail::key_to_value(
      metric, p, static_cast<float>(detail::cpu::exact_key(Metric::InnerProduct, p, an.data(), bn.data(), dim)));
}

}  // namespace gknn
