// registry.cu: DistanceAlgorithm -> GPU kernel, which key metrics each serves, and Auto's choice. Each kernel
// folder holds an entries.inc with one line, GKNN_DISTANCE_ENTRY(Id, supports, needs_norms, omits_query_norm, fn,
// workspace, exact_on, fused_serves, fused, fused_operand_bytes): the enum value
// (gknn/algorithms.def), the key metrics it serves (a predicate of distance.cuh), whether the pipeline must
// provide squared row norms, whether its squared L2 keys leave out |q|^2, its run function, its scratch size and,
// for a lower-precision kernel, the data it is exact on, and for a fused distance+selection kernel where it
// serves, its entry point and the size of its kept operand copy of a resident base (else three nullptr).
// src/CMakeLists.txt gathers every distance/*/entries.inc into all_entries.inc, so a new folder is registered
// without editing a list here.
#include <iterator>

#include "cuda/distance/kernels.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {
namespace {

const DistanceEntry kDistanceEntries[] = {
// One line per folder: GKNN_DISTANCE_ENTRY(Id, supports, needs_norms, omits_query_norm, fn, workspace, exact_on,
// fused_serves, fused, fused_operand_bytes).
#define GKNN_DISTANCE_ENTRY(id, supports, needs_norms, omits_query_norm, fn, workspace, exact_on, fused_serves, fused, \
                            fused_operand_bytes)                                                                    \
  {DistanceAlgorithm::id, supports, needs_norms, omits_query_norm, fn, workspace, exact_on, fused_serves, fused, \
   fused_operand_bytes},
#include "cuda/distance/all_entries.inc"
#undef GKNN_DISTANCE_ENTRY
};

/// Below this dimension a GEMM has too little work per output to beat a direct kernel.
constexpr int64_t kGemmMinDim = 16;
/// Below kGemmMinDim (H200 suite, d = 2, 3, 8, n = 16K..1M, k = 1..1000, bench/results/suite_2026-11-27_h200):
/// with fewer queries than this the one-key-per-thread kernel (naive) is fastest (q = 1: within 1.12 of the best
/// in 26 of 30 cells; garcia_global's 16-query tiles idle, up to 1.7x); with more, lp_gemm's register blocking
/// (q = 64..1024: within 1.1 of the best, garcia_global 1.3-2.7x) ...
constexpr int64_t kSmallDimMinTiledQueries = 16;
/// ... unless integer data give the fused kernel this many query x base pairs: then it is (q x n >= 2^27: within
/// 1.06 of the best but at k = 1000 on 16K rows, 1.22; lp_gemm 1.6-4.6x at q >= 1024 on 262K rows).
constexpr int64_t kSmallDimFusedMinPairs = int64_t(1) << 27;
/// Below this many queries Auto prefers SGEMM to the fp16 GEMM (H100, 1M x 128 base: q = 1/16 faster in fp32).
constexpr int64_t kFp16MinQueries = 64;
/// Byte-sized integer data beyond fp16_mma's range (uint8 rows past d = 129): int8_mma from this many queries (it
/// converts the base tile every call, as fp16_mma does). Its keys are exact integers rounded once, so the guard's
/// bound is a rounding's instead of SGEMM's d-term sums: K' stays near k where SGEMM keys at d = 960 sent queries
/// to the 4x retry (H200 suite, integer 262144 x 10000 x 960, k = 1000: every pair 1.0-1.3 s).
constexpr int64_t kInt8MinQueries = 64;
/// Guarded float data: Auto takes tf32 (operands rounded to nearest TF32, candidates re-ranked and certified on the
/// device) from this many queries (the base is rounded on every call, and the certificate's fixed cost is spread
/// over the queries) and up to this k (K' = 2k + 64 candidates: the selection's k grows faster than cuBLAS's
/// k + k / 4). H100, SIFT1M shape with uniform floats, k = 100, guarded: tf32 41.5 ms (no query retried), cublas
/// 79.4 ms, tf32x3 51.6 ms. H200 suite (d = 32, 128, k = 10, 100): q = 64 tf32 1.15-1.6x the best (cublas or
/// lp_gemm) on 16K-1M rows; q = 1024 within 1.1 of it but in one cell (1.26).
constexpr int64_t kTf32MinQueries = 256;
constexpr int64_t kTf32MaxK = 256;
/// Auto prefers the fused kernel where it serves from this many queries and query x base pairs. H100, 1M x 128
/// uint8 base, k = 100, per call: q = 1 0.42 ms fused vs 0.30 SGEMM (the fused walk converts the whole base each
/// call), q = 16 0.48 vs 0.50, q = 128 0.89 vs 1.42; 10k x 128 base, q = 100: 0.26 vs 0.11 fp16_mma (the first
/// tiles' sorts dominate a short walk); Garcia's 16k x 4096: 0.61 vs 0.75; SIFT1M shape: 15.5 vs 33.6 ms.
constexpr int64_t kFusedMinQueries = 16;
constexpr int64_t kFusedMinPairs = int64_t(1) << 23;
/// With a kept operand copy of the base (DataFacts::keep_bytes) a search converts only its queries, so the fused
/// walk (n x 128 bytes for SIFT rows) beats SGEMM's n x d x 4 bytes and selection from one query on. Below this
/// many base rows the first tiles' cuts and the selection over the splits' lists are most of its time. H100, an
/// Index of uint8 rows, d = 128, k = 100, wall per call (gpu_bench_2026-11-24_kept_operands.md): q = 1 on 1M rows
/// 0.17 ms fused vs 0.29 SGEMM, q = 16 0.27 vs 0.49, q = 128 0.64 vs 1.83; q = 1 on 128k rows 0.105 vs 0.120, on
/// 32k rows 0.097 vs 0.094 (SGEMM).
constexpr int64_t kFusedKeptMinRows = int64_t(1) << 17;

}  // namespace

const DistanceEntry* find_distance(DistanceAlgorithm algorithm) {
  for (const DistanceEntry& e : kDistanceEntries)
    if (e.algorithm == algorithm) return &e;
  return nullptr;
}

const DistanceEntry* distance_entries_begin() { return std::begin(kDistanceEntries); }
const DistanceEntry* distance_entries_end() { return std::end(kDistanceEntries); }

namespace {

/// The fused kernel serves the search (data it is exact on, k, row bytes) and has the work to amortise its first
/// tiles' sorts: at least kFusedMinQueries queries and `min_pairs` query x base pairs.
bool fused_has_work(Metric key_metric, int64_t nq, int64_t nb, int64_t k, const DataFacts& facts, int64_t min_pairs) {
  const DistanceEntry* fused = find_distance(DistanceAlgorithm::Fused);
  return fused && fused->supports(key_metric) && fused->fused_serves(k, facts.dim, facts) &&
         nq >= kFusedMinQueries && nq * nb >= min_pairs;
}

/// Auto below kGemmMinDim: too little work per key for a GEMM (or the fp16 tensor cores) to pay off; the fused
/// kernel's 8-bit tensor-core walk still does with enough pairs, else a direct kernel shaped for the query count.
template <class Because>
DistanceAlgorithm choose_small_dim(Metric key_metric, int64_t nq, int64_t nb, int64_t k, const DataFacts& facts,
                                   const Because& because) {
  if (fused_has_work(key_metric, nq, nb, k, facts, kSmallDimFusedMinPairs))
    return because(DistanceAlgorithm::Fused, "d < 16, integer data, q x n >= 2^27: the fused kernel (tensor cores, "
                                             "exact; the key matrix is never written)");
  if (nq < kSmallDimMinTiledQueries)
    return because(DistanceAlgorithm::Naive, "d < 16, fewer than 16 queries: one key per thread (a tiled kernel's "
                                             "query tiles would idle)");
  if (find_distance(DistanceAlgorithm::LpGemm))
    return because(DistanceAlgorithm::LpGemm, "d < 16: the register-blocked direct kernel (lp_gemm; no GEMM pays off "
                                              "at this dimension)");
  return because(DistanceAlgorithm::GarciaGlobal, "d < 16: too little work per key for a GEMM to pay off");
}

}  // namespace

// Auto: for the dot-product metrics once dim is large enough for a GEMM to pay off, the fused distance + selection
// kernel where it serves (integer data, k <= 128: no key matrix at all), else the fp16 tensor-core GEMM
// where it is proven exact on the data (integers in its range; 4-7x the fp32 SGEMM's rate), else cuBLAS SGEMM;
// below d = 16 choose_small_dim; other metrics the Lp kernels.
DistanceAlgorithm choose_distance(Metric key_metric, int64_t nq, int64_t nb, int64_t k, const DataFacts& facts,
                                  std::string* why) {
  const auto because = [why](DistanceAlgorithm a, const char* reason) {
    if (why) *why = std::string("auto: ") + reason;
    return a;
  };
  if (facts.dim < kGemmMinDim) return choose_small_dim(key_metric, nq, nb, k, facts, because);
  // H100, uint8-valued data, k = 100 / 16 (bench/results/gpu_bench_2026-11-27_lp.md): L1 1M x 128, 10k queries
  // lp_gemm 129.6 ms vs garcia_global 428.3; Garcia's shape 1.39 vs 3.38 ms; Linf alike. Same keys, bit for bit.
  if (!gemm_key_metric(key_metric)) {
    const DistanceEntry* bytes = find_distance(DistanceAlgorithm::LpBytes);
    if (bytes && bytes->supports(key_metric) && bytes->exact_on(facts))
      return because(DistanceAlgorithm::LpBytes, "L1/Linf keys of byte-sized integer data: lp_gemm's tiles on packed "
                                                 "words, 4 (L1) or 2 (Linf) terms per SIMD instruction, exact (H100, "
                                                 "SIFT1M shape, L1: 54.5 ms, lp_gemm 128.6)");
    if (find_distance(DistanceAlgorithm::LpGemm))
      return because(DistanceAlgorithm::LpGemm, "L1/Linf/Lp keys: the modified MAGMA GEMM whose inner operation is the "
                                                "metric's term, register-blocked (3.3x garcia_global, SIFT1M shape)");
    return because(DistanceAlgorithm::GarciaGlobal, "L1/Linf/Lp keys have no GEMM form: the tiled shared-memory kernel");
  }
  // The fp16 path converts the base tile every call: with few queries that copy costs more than the SGEMM reads.
  if (!fp16_mma_exact_on(facts)) {
    const DistanceEntry* int8 = find_distance(DistanceAlgorithm::Int8Mma);
    if (int8 && int8->exact_on(facts) && nq >= kInt8MinQueries)
      return because(DistanceAlgorithm::Int8Mma, "byte-sized integer data beyond fp16_mma's exact range: int8 tensor "
                                                  "cores, exact integer keys (re-ranked within one float32 rounding "
                                                  "where they pass 2^24)");
    if (facts.guarded && nq >= kTf32MinQueries && k <= kTf32MaxK && find_distance(DistanceAlgorithm::Tf32))
      return because(DistanceAlgorithm::Tf32, "float data under the exactness guard: TF32 tensor cores (operands "
                                              "rounded to nearest), every query's 2k + 64 candidates re-ranked on "
                                              "float64 keys on the device, so exact (1.9x fp32 SGEMM, SIFT1M shape)");
    return because(DistanceAlgorithm::Cublas, "the data are not integers in fp16_mma's exact range: fp32 SGEMM");
  }
  if (fused_has_work(key_metric, nq, nb, k, facts, kFusedMinPairs))
    return because(DistanceAlgorithm::Fused, "integer data, k <= 1024, rows <= 256 bytes: the fused kernel (tensor "
                                             "cores, exact; the key matrix is never written)");
  const DistanceEntry* fused = find_distance(DistanceAlgorithm::Fused);
  if (fused && fused->fused_serves(k, facts.dim, facts) && nb >= kFusedKeptMinRows &&
      fused->fused_operand_bytes(nb, facts.dim, facts) <= facts.keep_bytes)
    return because(DistanceAlgorithm::Fused, "integer data, k <= 1024, a resident base whose 8/16-bit operands are "
                                             "kept between searches: the fused kernel reads them, no key matrix");
  if (nq < kFp16MinQueries)
    return because(DistanceAlgorithm::Cublas, "fewer than 64 queries: fp32 SGEMM (the fp16 base conversion costs more)");
  return because(DistanceAlgorithm::Fp16Mma, "integer data in fp16_mma's exact range: fp16 tensor cores, exact");
}

const DistanceEntry& resolve_distance(DistanceAlgorithm requested, Metric key_metric, int64_t nq, int64_t nb,
                                      int64_t k, const DataFacts& facts, std::string* why) {
  const DistanceAlgorithm a =
      requested == DistanceAlgorithm::Auto ? choose_distance(key_metric, nq, nb, k, facts, why) : requested;
  if (requested != DistanceAlgorithm::Auto && why) *why = "requested";
  const DistanceEntry* e = find_distance(a);
  GKNN_EXPECT(e != nullptr, ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              " is not available on the cuda backend");
  GKNN_EXPECT(e->supports(key_metric), ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              " does not support metric ", to_string(key_metric), " on the cuda backend");
  const bool bytes = a == DistanceAlgorithm::LpBytes || a == DistanceAlgorithm::Int8Mma;
  GKNN_EXPECT(!e->exact_on || e->exact_on(facts), ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              bytes ? " computes exactly only on integer data that fit a byte (0..255, or -127..127 with negative "
                      "values)"
                    : " computes exactly only on integer data with |x| <= 2048 whose partial sums stay below 2^24 "
                      "(2 d max|x|^2 < 2^24 for non-negative data, 4 d max|x|^2 otherwise)",
              a == DistanceAlgorithm::Int8Mma ? " of dimension at most 131071" : "", "; these data are not (max |x| = ",
              facts.values.max_abs, ", dimension ", facts.dim, ", integers: ", facts.values.integral ? "yes" : "no",
              "): use ", a == DistanceAlgorithm::LpBytes ? "lp_gemm" : "cublas");
  return *e;
}

}  // namespace gknn::detail::cuda
