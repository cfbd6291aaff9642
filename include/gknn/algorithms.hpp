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
#define GKNN_DISTANCE(id, name, backends, summary) id,
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
/// "+flag" suffixes a selection accepts: none, or Tang et al.'s aligned/buffered/hp (TangOptions).
inline constexpr unsigned none = 0u;
inline constexpr unsigned tang = 1u;

struct DistanceInfo {
  DistanceAlgorithm algorithm;
  const char* name;
  unsigned backends;
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
#define GKNN_DISTANCE(id, name, backends, summary) {DistanceAlgorithm::id, name, backends, summary},
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
