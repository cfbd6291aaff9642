// generate.cpp: synthetic datasets that are bit-identical on every machine for a given seed.
//
// Portability is why this file avoids std:: distributions (their algorithms differ between standard
// libraries) and std::log (C libraries may differ in the last bit): the only sources of numbers are
// std::mt19937_64 (fully specified by the standard) and IEEE-exact operations (+ - * / sqrt, frexp).
// Rows are produced in fixed blocks, each from its own generator, so the output does not depend on the
// number of threads either.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <string_view>

#include "gknn/error.hpp"
#include "gknn/generate.hpp"

// A fused multiply-add rounds once instead of twice; letting the compiler contract where the CPU has FMA
// would make the bytes machine-dependent. GCC already does not contract in ISO C++ mode (-std=c++20).
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

namespace gknn {
namespace {

constexpr int64_t kBlockRows = 1024;
constexpr double kClusterSigma = 0.1;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Independent stream `stream` of `seed` (0: cluster centres, b+1: row block b).
std::mt19937_64 stream_of(uint64_t seed, uint64_t stream) { return std::mt19937_64(splitmix64(seed ^ splitmix64(stream))); }

/// Uniform on [0, 1) with 53 random bits; exact.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

/// Natural logarithm of a positive finite x from IEEE-exact operations only. x = m * 2^e with m in
/// [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172: the series to s^21 is below
/// double rounding.
double portable_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  double s = (m - 1.0) / (m + 1.0);
  double s2 = s * s;
  double series = 1.0 / 21.0;
  for (int odd = 19; odd >= 1; odd -= 2) series = series * s2 + 1.0 / odd;
  return static_cast<double>(e) * 0.69314718055994530942 + 2.0 * s * series;
}

/// Standard normal pairs by Marsaglia's polar method (needs only log and sqrt, unlike Box-Muller).
class Normal {
 public:
  double next(std::mt19937_64& rng) {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform01(rng) - 1.0;
      v = 2.0 * uniform01(rng) - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double factor = std::sqrt(-2.0 * portable_log(s) / s);
    spare_ = v * factor;
    have_spare_ = true;
    return u * factor;
  }

 private:
  double spare_ = 0.0;
  bool have_spare_ = false;
};

void check_params(int64_t rows, int64_t cols, const GenerateParams& p) {
  GKNN_EXPECT(rows >= 0 && cols >= 0, ErrorCode::InvalidArgument, "generate: rows and cols must be >= 0, got ",
              rows, " x ", cols);
  if (p.distribution == Distribution::GaussianClusters)
    GKNN_EXPECT(p.clusters >= 1, ErrorCode::InvalidArgument, "generate: clusters must be >= 1, got ", p.clusters);
  if (p.distribution == Distribution::Exponential)
    GKNN_EXPECT(std::isfinite(p.lambda) && p.lambda > 0, ErrorCode::InvalidArgument,
                "generate: lambda must be a positive finite rate, got ", p.lambda);
}

/// Fills rows [first, last) of m from its block's generator.
void fill_block(HostMatrix<float>& m, int64_t first, int64_t last, const GenerateParams& p,
                const HostMatrix<float>& centres, std::mt19937_64 rng) {
  Normal normal;
  for (int64_t r = first; r < last; ++r) {
    float* row = m.row(r);
    const float* centre = nullptr;
    if (p.distribution == Distribution::GaussianClusters) {
      // (32 random bits * clusters) >> 32 is in [0, clusters) without a modulo's extra bias.
      uint64_t pick = ((rng() >> 32) * static_cast<uint64_t>(p.clusters)) >> 32;
      centre = centres.row(static_cast<int64_t>(pick));
    }
    for (int64_t c = 0; c < m.cols; ++c) {
      switch (p.distribution) {
        case Distribution::Uniform: row[c] = static_cast<float>(rng() >> 40) * 0x1.0p-24f; break;
        case Distribution::Gaussian: row[c] = static_cast<float>(normal.next(rng)); break;
        case Distribution::GaussianClusters:
          row[c] = static_cast<float>(centre[c] + kClusterSigma * normal.next(rng));
          break;
        case Distribution::Exponential:
          // Inverse CDF; 1 - u lies in (0, 1], so the logarithm is finite.
          row[c] = static_cast<float>(-portable_log(1.0 - uniform01(rng)) / p.lambda);
          break;
      }
    }
  }
}

}  // namespace

HostMatrix<float> generate(int64_t rows, int64_t cols, const GenerateParams& params) {
  check_params(rows, cols, params);
  HostMatrix<float> m(rows, cols);
  HostMatrix<float> centres;
  if (params.distribution == Distribution::GaussianClusters) {
    centres = generate(params.clusters, cols, {Distribution::Uniform, splitmix64(params.seed), 1, 1.0});
  }
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
#pragma omp parallel for schedule(dynamic)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t first = b * kBlockRows;
    int64_t last = std::min(rows, first + kBlockRows);
    fill_block(m, first, last, params, centres, stream_of(params.seed, static_cast<uint64_t>(b) + 1));
  }
  return m;
}

namespace {
struct DistributionName {
  Distribution d;
  const char* name;
};
constexpr DistributionName kDistributionNames[] = {{Distribution::Uniform, "uniform"},
                                                   {Distribution::Gaussian, "gaussian"},
                                                   {Distribution::GaussianClusters, "clusters"},
                                                   {Distribution::Exponential, "exponential"}};
}  // namespace

Distribution parse_distribution(std::string_view name) {
  if (name == "expo") return Distribution::Exponential;  // the self-join paper's name for its EXPO sets
  std::string accepted;
  for (const auto& [d, n] : kDistributionNames) {
    if (name == n) return d;
    accepted += accepted.empty() ? "" : ", ";
    accepted += n;
  }
  detail::fail(ErrorCode::InvalidArgument, "unknown distribution '", name, "' (accepted: ", accepted, ")");
}

std::string to_string(Distribution d) {
  for (const auto& [dist, n] : kDistributionNames)
    if (dist == d) return n;
  return "unknown";
}

}  // namespace gknn
