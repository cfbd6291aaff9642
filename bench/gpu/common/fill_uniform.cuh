// fill_uniform.cuh: benchmark keys generated on the device, identical for every launch shape and run.
// Defines a kernel: include it from one translation unit per benchmark executable.
#pragma once

#include <cstdint>

namespace gknn::bench {

/// Counter-based hash (splitmix64): element i of the seed's stream, independent of the launch shape.
/// 24 random bits per key: uniform in [0, 1), with the occasional tie.
__global__ void fill_uniform(float* keys, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    uint64_t z = seed + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    keys[i] = static_cast<float>(z >> 40) * 0x1.0p-24f;
  }
}

}  // namespace gknn::bench
