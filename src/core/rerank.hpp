// rerank.hpp: the exactness guard of a lower-precision squared-L2 path (issue 12, "tf32"-style float data): a
// fast GEMM on inputs rounded to fewer mantissa bits ranks the base, its K' best candidates per query are re-ranked
// on exact float64 distances, and a certificate proves per query that no other row can enter its top k. Queries
// without the certificate are retried with more candidates. The result then equals the float64 oracle's, ids and
// order, on any data. Backend-neutral: the GPU computes the candidates, this decides and re-ranks.
//
// Bound. With inputs rounded to m explicit mantissa bits (unit u_r = 2^-(m+1); TF32 m = 10, bf16 7, fp16 10),
// exact products of the rounded inputs (tensor cores) and float32 accumulation over d terms in any order, possibly
// truncating (unit u = 2^-23, gamma_d = d u / (1 - d u)), the key |x|^2 - 2 q.x + |q|^2 (norms in float32) differs
// from the exact squared distance by at most
//     eps(q, x) = (gamma_d + 2u) (|x|^2 + |q|^2) + 2 (2 u_r + u_r^2 + 2 gamma_d + 2u) |q| |x|,
// (Cauchy-Schwarz bounds sum |q_i x_i| by |q| |x|), doubled for safety. Per query the bound uses the largest base
// norm: eps_q = max_x eps(q, x).
//
// Certificate. Candidates are the K' rows of smallest computed key (ties by index). Any other row x has computed key
// >= a_K' (the K'-th candidate's), so its exact distance is >= a_K' - eps_q. When a_K' - eps_q exceeds the k-th
// exact distance among the candidates, x lies strictly behind the top k: the re-ranked candidates' first k are the
// exact top k. (K' = n needs no certificate.)
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "gknn/types.hpp"

namespace gknn::detail {

/// The error model of a lower-precision squared-L2 GEMM (see above).
struct LowPrecisionBound {
  int mantissa_bits = 10;  ///< explicit mantissa bits of the rounded inputs (TF32 10, bf16 7, fp16 10)
  int64_t dim = 0;
  /// eps_q for a query of norm |q| against a base whose largest norm is max_base_norm (both Euclidean norms).
  double query_bound(double query_norm, double max_base_norm) const;
};

/// A query's candidates re-ranked: the first k (or fewer) of its candidates in (exact float64 squared distance,
/// index) order, and whether the certificate holds.
struct RerankedRow {
  std::vector<std::pair<double, int64_t>> top;  ///< ascending, at most k
  bool certified = false;
};

/// Re-ranks row `candidate_row` of `candidates` (K' = candidates.k per row: computed keys ascending with global
/// base indices, -1 padding), the candidates of query `query`, on exact distances between queries.row(query) and
/// base rows, and checks the certificate with bound `eps` (K' >= base.rows certifies by itself).
RerankedRow rerank_row(const KeyResult& candidates, int64_t candidate_row, FloatView base, FloatView queries,
                       int64_t query, int64_t k, double eps);

/// The first K' to try for k among n rows: k plus a margin (k / 4, at least 16), at most n.
int64_t first_candidate_count(int64_t k, int64_t n);

/// rerank_row for every row: candidates row i holds the candidates of query rows[i]. Each certified query's top k
/// goes into `out` (queries.rows x k: squared distances rounded to float, indices; -1/+inf padding); the queries
/// without the certificate are returned, in order (to retry with more candidates). eps is per query row.
std::vector<int64_t> rerank_rows(const KeyResult& candidates, const std::vector<int64_t>& rows, FloatView base,
                                 FloatView queries, int64_t k, const std::vector<double>& eps, KeyResult& out,
                                 int threads);

}  // namespace gknn::detail
