// ceilings.hpp: issue 12's reporting requirement — each distance path's stage as a fraction of its arithmetic
// ceiling and of HBM bandwidth, the floor first. gknn_gpu_bench measures the ceilings once per run on the device
// (measure_ceilings, ceilings.cu: cuBLAS GEMMs and an FMA kernel) and applies the model below to every row.
//
// The model (also printed in the benchmark's notes):
//   unit      which measured ceiling bounds the path (path_unit: the one place a path is mapped to its precision):
//             cublas -> fp32 SGEMM; tf32, tf32x3 -> TF32 GEMM; fp16_mma -> fp16 GEMM with fp32 accumulation;
//             int8_mma -> int8 GEMM with int32 accumulation;
//             fused -> int8 GEMM with int32 accumulation on 8-bit data (its u8/s8 mma.sync), the fp16 GEMM on
//             integers up to 2048 (f16 mma.sync) and, where it does not serve (k > 128, rows over 256 bytes),
//             fp16_mma's two-stage path; the SIMT kernels (naive, shared_reduce, atomic, garcia_global,
//             garcia_texture, lp_gemm) -> the fp32 SIMT instruction rate.
//   work      GEMM units: 2 nq nb d flops (one multiply and one add per component; the folded norm columns,
//             1 to 3 of them, are not counted), x3 for tf32x3 (its 3d columns). SIMT: nq nb d x the instructions
//             per component of the metric's term and combine: squared L2 2 (subtract, FMA), inner product and cosine
//             1 (FMA), L1 2 (subtract, add with the |.| modifier), Linf 2 (subtract, max with |.|), Lp 2 (its
//             powf is not counted: a lower bound); lp_bytes on packed words: L1 0.5 (vsadu4 + add per 4 bytes),
//             Linf 1 (half2 subtract + half2 max per 2 halves). Loads, index arithmetic and the atomics of `atomic` are not
//             counted either: the SIMT floor is that of the arithmetic alone.
//   bytes     the least the stage must move through HBM: the nq x nb key matrix written once (4 bytes a key)
//             unless the path is fused (no key matrix), the queries read once (float32) and the base read once
//             per query tile of the pipeline (float32 rows: every GEMM path converts them into its augmented
//             operands each call; the fused kernel reads its kept operand copy of an Index's base, 1 byte a
//             component for 8-bit data, 2 for f16, and the float32 rows when that copy is off). Norms and the
//             augmented copies' own traffic are not counted.
//   floor     max(work / ceiling, bytes / copy bandwidth); the fractions are each term over the measured distance
//             stage (for fused: the whole kernel, selection included). The GEMM ceilings are cuBLAS's rates at
//             m = n = k = 8192 (wgmma kernels on Hopper), the copy bandwidth counts bytes read + written.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "gknn/algorithms.hpp"
#include "gknn/types.hpp"

namespace gknn_bench {

/// The compute units a distance path runs on; each has one measured ceiling.
enum class Unit { Sgemm, Tf32, Fp16, Int8, Simt };

inline const char* unit_name(Unit u) {
  switch (u) {
    case Unit::Sgemm: return "fp32_sgemm";
    case Unit::Tf32: return "tf32";
    case Unit::Fp16: return "fp16_f32acc";
    case Unit::Int8: return "int8_i32acc";
    case Unit::Simt: return "simt_fp32";
  }
  return "?";
}

/// Rates measured on the device (0: not measured, or the GEMM failed). GEMM rates count 2 operations per
/// multiply-add (flop/s; op/s for int8); the SIMT rate counts instructions (one FMA per lane = 1).
struct Ceilings {
  double sgemm = 0, tf32 = 0, fp16 = 0, int8 = 0;  ///< per second
  double simt = 0;                                 ///< fp32 FMA instructions per second (lane ops)
  double copy_bytes_per_s = 0;                     ///< device-to-device copy, bytes read + written per second
  int64_t gemm_n = 0;                              ///< the GEMMs' m = n = k
  std::string errors;                              ///< what failed, if anything

  double rate(Unit u) const {
    switch (u) {
      case Unit::Sgemm: return sgemm;
      case Unit::Tf32: return tf32;
      case Unit::Fp16: return fp16;
      case Unit::Int8: return int8;
      case Unit::Simt: return simt;
    }
    return 0;
  }
};

/// Measures them on the current device: each cuBLAS GEMM (TN, m = n = k = gemm_n, operands filled with
/// pseudo-random values) `reps` times after two warm-ups, the median; an FMA-throughput kernel, the median of 5.
/// `copy_bytes_per_s` is the benchmark's own copy measurement, passed through.
Ceilings measure_ceilings(int64_t gemm_n, int reps, double copy_bytes_per_s);

/// The data a configuration searches, as far as the model needs it.
struct DataKind {
  bool integers_u8 = true;  ///< integers 0..255 (8-bit operands for fused), else float32 data
};

/// Whether the fused kernel serves (writes no key matrix): fused_serves() of src/cuda/distance/fused/fused.cu,
/// k <= 1024 and rows of at most 256 operand bytes (8-bit operands where the values fit, else f16).
inline bool fused_serves_model(DataKind data, int64_t dim, int64_t k) {
  const int64_t operand_bytes = data.integers_u8 ? 1 : 2;
  return k >= 1 && k <= 1024 && dim * operand_bytes <= 256;
}

/// The unit that bounds `path` on these data and this k (the registry entry's precision; see the model above).
inline Unit path_unit(gknn::DistanceAlgorithm path, DataKind data, int64_t dim, int64_t k) {
  using gknn::DistanceAlgorithm;
  switch (path) {
    case DistanceAlgorithm::Cublas: return Unit::Sgemm;
    case DistanceAlgorithm::Tf32:
    case DistanceAlgorithm::Tf32x3: return Unit::Tf32;
    case DistanceAlgorithm::Fp16Mma: return Unit::Fp16;
    case DistanceAlgorithm::Int8Mma: return Unit::Int8;
    case DistanceAlgorithm::Fused:
      return fused_serves_model(data, dim, k) && data.integers_u8 ? Unit::Int8 : Unit::Fp16;
    default: return Unit::Simt;  // naive, shared_reduce, atomic, garcia_global, garcia_texture, lp_gemm, lp_bytes
  }
}

/// True when `path` writes no key matrix (the fused kernel where it serves).
inline bool path_is_fused(gknn::DistanceAlgorithm path, DataKind data, int64_t dim, int64_t k) {
  return path == gknn::DistanceAlgorithm::Fused && fused_serves_model(data, dim, k);
}

/// SIMT instructions per component of the metric's term and combine (see the model above). lp_bytes packs the
/// components: L1 one vsadu4 and one add per 4 bytes, Linf one half2 subtract and one half2 max per 2 halves.
inline double simt_instructions_per_term(gknn::DistanceAlgorithm path, gknn::Metric metric) {
  if (path == gknn::DistanceAlgorithm::LpBytes) return metric == gknn::Metric::L1 ? 0.5 : 1.0;
  switch (metric) {
    case gknn::Metric::InnerProduct:
    case gknn::Metric::Cosine: return 1;
    default: return 2;  // squared L2 / L2: subtract + FMA; L1: subtract + add |.|; Linf: subtract + max |.|; Lp
  }
}

/// One distance stage's work, least traffic, floor and fractions.
struct StageFloor {
  Unit unit = Unit::Simt;
  double ops = 0;    ///< flops (GEMM units) or instructions (SIMT)
  double bytes = 0;  ///< least bytes through HBM
  double arith_ms = 0, hbm_ms = 0, floor_ms = 0;
  double arith_fraction = 0, hbm_fraction = 0;  ///< arith_ms / measured, hbm_ms / measured
  bool valid = false;                           ///< the unit's ceiling and the copy bandwidth were measured
  const char* bound() const { return arith_ms >= hbm_ms ? "arith" : "hbm"; }
};

/// The model for one row. `query_tiles`: the pipeline's query tiles (the base is read once per tile);
/// `kept_operands`: the fused kernel reads an Index's kept operand copy (hooks.hpp: set_operand_cache_enabled).
inline StageFloor stage_floor(gknn::DistanceAlgorithm path, gknn::Metric metric, DataKind data, int64_t nq,
                              int64_t nb, int64_t dim, int64_t k, int64_t query_tiles, bool kept_operands,
                              double distance_ms, const Ceilings& c) {
  StageFloor f;
  f.unit = path_unit(path, data, dim, k);
  const double terms = double(nq) * double(nb) * double(dim);
  if (f.unit == Unit::Simt)
    f.ops = terms * simt_instructions_per_term(path, metric);
  else
    f.ops = 2 * terms * (path == gknn::DistanceAlgorithm::Tf32x3 ? 3 : 1);
  const bool fused = path_is_fused(path, data, dim, k);
  const double base_width = fused && kept_operands ? (data.integers_u8 ? 1 : 2) : 4;
  f.bytes = (fused ? 0 : double(nq) * double(nb) * 4) + double(nq) * dim * 4 +
            double(std::max<int64_t>(1, query_tiles)) * double(nb) * dim * base_width;
  const double rate = c.rate(f.unit);
  f.valid = rate > 0 && c.copy_bytes_per_s > 0;
  if (!f.valid) return f;
  f.arith_ms = f.ops / rate * 1e3;
  f.hbm_ms = f.bytes / c.copy_bytes_per_s * 1e3;
  f.floor_ms = std::max(f.arith_ms, f.hbm_ms);
  if (distance_ms > 0) {
    f.arith_fraction = f.arith_ms / distance_ms;
    f.hbm_fraction = f.hbm_ms / distance_ms;
  }
  return f;
}

}  // namespace gknn_bench
