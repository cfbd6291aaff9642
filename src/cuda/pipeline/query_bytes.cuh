// query_bytes.cuh: host queries uploaded as bytes where every value is an integer of a byte's range (issue 13).
//
// Garcia's shape (4096 x 128 queries, k = 16) spent ~0.1 ms packing its 2 MB of float queries into a pinned slot
// and ~0.1 ms copying them before a 0.25 ms fused kernel. Packed as bytes (Stager<uint8_t, float>) the copy is a
// quarter, and one small kernel widens them back into the float rows every distance path reads, so that nothing
// downstream changes.
#pragma once

#include <cstdint>
#include <optional>

#include <cuda_runtime.h>

#include "core/backend.hpp"
#include "cuda/distance/distance.cuh"

namespace gknn::detail::cuda {

/// Whether a search's host queries go up as bytes, and as which: nullopt (floats), false (uint8), true (int8).
/// Bytes only where they change nothing: the value facts (queries and base merged: so the queries' too) are known
/// integers of the byte's range, and the distance path is one of the lower-precision kernels proven exact on such
/// data (its exact_on), which round the queries to 8 or 16 bits themselves. GKNN_QUERY_BYTES=0 keeps floats (to
/// measure the two).
std::optional<bool> query_byte_form(const DistanceEntry& distance, const DataFacts& facts);

/// dst[i] = byte i as a float (int8 when `is_signed`), i in [0, count), on `s`.
void widen_bytes(const uint8_t* src, int64_t count, bool is_signed, float* dst, cudaStream_t s);

}  // namespace gknn::detail::cuda
