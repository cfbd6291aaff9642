// gknn/algorithms.hpp: the algorithm enums and their catalogue, both generated from gknn/algorithms.def.
//
// The catalogue is what the library knows about each algorithm before asking a backend: its name, which
// backends implement it, the "+flag" suffixes it accepts and one line saying what it is (`gknn info` prints it).
#pragma once

#include <string_view>

namespace gknn {

/// How the distance matrix (or its tiles) is computed. Each backend accepts its own subset; Auto picks the
/// fastest exact one for the configuration. The values after Auto and what each is: gknn/algorithms.def.
enum class DistanceAlgorithm {
  Auto,
#define GKNN_DISTANCE(id, name, backends, precision, summary) id,
#include "gknn/algorithms.def"
};

/// How the k best of each row are selected. The values after Auto and what each is: gknn/algorithms.def.
enum class SelectAlgorithm {
  Auto,
#define GKNN_SELECT(id, name, backends, flags, summary) id,
#include "gknn/algorithms.def"
};

namespace catalogue {

/// Backends that implement an algorithm (bit set; the words algorithms.def uses).
inline constexpr unsigned cpu = 1u;
inline constexpr unsigned cuda = 2u;
/// How exact a distance algorithm's keys are (the exactness guard, SearchParams::guard, reads it):
///   float64       keys from float64 sums (the reference): no guard;
///   float32       float32 inputs, products and sums: exact on integer data whose sums stay below 2^24, else
///                 re-ranked;
///   integer_only  runs only on integer data it is proven exact on (refused elsewhere): no guard;
///   integer_keys  runs only on integer data it holds (refused elsewhere), computes each key exactly as an integer
///                 and rounds it once to float32: exact while every key stays below 2^24, else re-ranked (the
///                 bound is that one rounding);
///   tf32          inputs rounded to TF32 (10 mantissa bits): exact on the data integer_only paths take, else
///                 re-ranked;
///   tf32x3        split-precision TF32 (float32-level products): as tf32.
enum class KeyPrecision { float64, float32, integer_only, integer_keys, tf32, tf32x3 };
using enum KeyPrecision;

/// "+flag" suffixes a selection accepts: none, or Tang et al.'s aligned/buffered/hp (TangOptions).
inline constexpr unsigned none = 0u;
inline constexpr unsigned tang = 1u;

struct DistanceInfo {
  DistanceAlgorithm algorithm;
  const char* name;
  unsigned backends;
  KeyPrecision precision;
  const char* summary;
};

struct SelectInfo {
  SelectAlgorithm algorithm;
  const char* name;
  unsigned backends;
  unsigned flags;
  const char* summary;
};

/// Every algorithm but Auto, in the order of algorithms.def (= enum order).
inline constexpr DistanceInfo kDistances[] = {
#define GKNN_DISTANCE(id, name, backends, precision, summary) {DistanceAlgorithm::id, name, backends, precision, summary},
#include "gknn/algorithms.def"
};
inline constexpr SelectInfo kSelects[] = {
#define GKNN_SELECT(id, name, backends, flags, summary) {SelectAlgorithm::id, name, backends, flags, summary},
#include "gknn/algorithms.def"
};

/// The entry of an algorithm; nullptr for Auto.
constexpr const DistanceInfo* find(DistanceAlgorithm a) {
  for (const DistanceInfo& d : kDistances)
    if (d.algorithm == a) return &d;
  return nullptr;
}
constexpr const SelectInfo* find(SelectAlgorithm a) {
  for (const SelectInfo& s : kSelects)
    if (s.algorithm == a) return &s;
  return nullptr;
}

/// True when the selection accepts Tang et al.'s flags (+aligned +buffered +hp).
constexpr bool takes_tang_flags(SelectAlgorithm a) {
  const SelectInfo* s = find(a);
  return s != nullptr && (s->flags & tang) != 0;
}

}  // namespace catalogue
}  // namespace gknn
