// gknn/generate.hpp: reproducible synthetic datasets (fixed seed => same bytes on every machine).
#pragma once

#include <cstdint>
#include <string_view>

#include "gknn/io.hpp"

namespace gknn {

enum class Distribution {
  Uniform,           ///< i.i.d. uniform on [0, 1)^d
  Gaussian,          ///< i.i.d. standard normal
  GaussianClusters,  ///< mixture of `clusters` Gaussians (sigma 0.1) with centres uniform in [0,1)^d
  Exponential,       ///< i.i.d. exponential with rate lambda (the self-join paper's EXPO: lambda = 40)
};

struct GenerateParams {
  Distribution distribution = Distribution::Uniform;
  uint64_t seed = 42;
  int clusters = 16;
  double lambda = 40.0;
};

/// rows x cols values. A seed fixes the bytes on every machine, compiler and thread count, and asking for
/// fewer rows gives a prefix of the larger dataset. InvalidArgument for negative sizes, clusters < 1, or a
/// lambda that is not positive and finite.
HostMatrix<float> generate(int64_t rows, int64_t cols, const GenerateParams& params = {});
/// "uniform", "gaussian", "clusters", "exponential" (InvalidArgument naming them otherwise).
Distribution parse_distribution(std::string_view name);
std::string to_string(Distribution d);

}  // namespace gknn
