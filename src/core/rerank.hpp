// rerank.hpp: the certificate of the exactness guard (guard.hpp): a distance path whose keys are within a proven
// bound eps of the exact ones ranks the base, its K' best candidates per query are re-ranked on exact float64 keys,
// and a certificate proves per query that no other row can enter its top k. Queries without the certificate are
// retried with more candidates. The result then equals the float64 oracle's, ids and order, on any data.
//
// Bound (KeyErrorBound). Each operand value v enters the products as v' with |v' - v| <= e |v| (e = 0 for float32
// inputs, 2^-10 for TF32 whether rounded or truncated, 2^-11 rounded to nearest, 2^-21 for split TF32), the
// products of the v' are formed exactly or in float32, and float32 sums over at most `terms` terms (the dimension
// and any folded norm columns), in any order, possibly truncating (unit u = 2^-23, gamma_t = t u / (1 - t u)),
// give the key |x|^2 - 2 q.x + |q|^2 (the norms float32 sums or exact pieces; the last two additions float32). Then
//     |computed - exact| <= (gamma_t + 2u) (|x|^2 + |q|^2) + 2 (2e + e^2 + 2 gamma_t + 2u) |q| |x|
// (Cauchy-Schwarz bounds sum |q_i x_i| by |q| |x|), and the inner product key -q.x by less. Direct sums of
// (q_i - x_i)^2 stay within gamma_(t+2) (|q| + |x|)^2, also below it. Underflow adds absolute errors the relative
// terms miss: a float32 operation with a subnormal result errs by at most 2^-150, a TF32 rounding (or the tensor
// cores' truncation) of a value below 2^-126 by 2^-136 (times the other operand: at most |q| + |x|, or 1 for a norm
// piece), so eps adds (t + 3) 2^-135 (1 + |q| + |x|).
// query_bound() doubles it all, for the rounding of the bound itself and of float32 norms, and takes the largest
// base norm: eps_q = max_x eps(q, x).
//
// Certificate. Candidates are the K' rows of smallest computed key (ties by index). Any other row x has computed key
// >= a_K' (the K'-th candidate's), so its exact key is >= a_K' - eps_q. When a_K' - eps_q exceeds the k-th exact
// key among the candidates, x lies strictly behind the top k: the re-ranked candidates' first k are the exact top k.
// A non-finite a_K' (a key that overflowed) proves nothing. K' = n needs no certificate.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "core/hd.hpp"
#include "gknn/types.hpp"

namespace gknn::detail {

/// eps_q of the bound above for operand error e, float32 sums of `terms` terms, a query of Euclidean norm q and a
/// base whose largest norm is x (the host's guard and the device's certificate, cuda/pipeline/certify.cuh).
GKNN_HD double key_error_bound(double e, int64_t terms, double q, double x) {
  const double u = 0x1p-23;  // float32 accumulation that may truncate
  const double tu = double(terms) * u;
  const double gamma = tu < 1 ? tu / (1.0 - tu) : HUGE_VAL;
  double eps = (gamma + 2 * u) * (x * x + q * q) + 2 * (2 * e + e * e + 2 * gamma + 2 * u) * q * x;
  eps += double(terms + 3) * 0x1p-135 * (1 + q + x);  // underflow
  return 2 * eps;  // safety factor: the bound's own rounding and the norms' float32 sums
}

/// The error model of a squared-L2 / inner-product key path (see above).
struct KeyErrorBound {
  double input_error = 0;  ///< e: relative error of each operand as the products see it
  int64_t terms = 0;       ///< float32 sums: at most this many terms per key
  /// Computed keys smaller than this in magnitude are the exact keys themselves (0: none): an integer-key path's
  /// float32 rounding of an exact integer key is exact below 2^24, so a certificate need not recompute them.
  double exact_below = 0;
  /// eps_q for a query of norm |q| against a base whose largest norm is max_base_norm (Euclidean norms).
  double query_bound(double query_norm, double max_base_norm) const;
};

/// Inputs rounded to m explicit mantissa bits, or truncated to them (TF32: m = 10, e = 2^-m covers both). Inputs
/// known to be rounded to nearest have half that error: pass m + 1 (the tf32 path, core/guard.cpp).
KeyErrorBound rounded_inputs_bound(int mantissa_bits, int64_t terms);

/// A query's candidates re-ranked: the first k (or fewer) of its candidates in (exact float64 key, index) order,
/// and whether the certificate holds.
struct RerankedRow {
  std::vector<std::pair<double, int64_t>> top;  ///< ascending, at most k
  bool certified = false;
};

/// Re-ranks row `row` of `candidates` (K' = candidates.k per row: computed keys ascending with base indices, -1
/// padding) on their exact keys exact[row * K' + j], and checks the certificate with bound `eps`; `rows` is the
/// base's row count (K' >= rows certifies by itself).
RerankedRow rerank_row(const KeyResult& candidates, int64_t row, const double* exact, int64_t rows, int64_t k,
                       double eps);

/// The first K' to try for k among n rows under `bound`, at most n: k plus a margin (k / 4, at least 16) for keys at
/// float32 accuracy; 2k + 64 for keys from TF32-rounded inputs, whose bound spans many more rows beyond the k-th (a
/// retry searches its queries again, the distance pass included, so the first K' should certify most queries).
int64_t first_candidate_count(int64_t k, int64_t n, const KeyErrorBound& bound = {});

/// rerank_row for every row: candidates row i holds the candidates of query query_of[i], exact its exact keys.
/// Each certified query's top k goes into `out` (queries x k: exact keys rounded to float, indices; -1/+inf
/// padding), row query_of[i], and its float64 keys into `exact_out` (queries x k, +inf padding) when it is not
/// null; the queries without the certificate are returned, in order (to retry with more candidates). eps is per
/// query.
std::vector<int64_t> rerank_rows(const KeyResult& candidates, const std::vector<int64_t>& query_of,
                                 const std::vector<double>& exact, int64_t rows, int64_t k,
                                 const std::vector<double>& eps, KeyResult& out, int threads,
                                 double* exact_out = nullptr);

}  // namespace gknn::detail
