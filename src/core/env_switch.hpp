// env_switch.hpp: the one reading of gknn's diagnosis switches (environment variables such as
// GKNN_NO_INITIALIZED_MARK): a switch is on when the variable is set, non-empty and not "0"; a default-on switch
// (env_switch_off) is off only when the variable is exactly "0". Callers read it once
// (a function-local static), so a search never pays a getenv.
#pragma once

#include <cstdlib>
#include <string_view>

namespace gknn::detail {

inline bool env_switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

/// A default-on switch: off only where the variable is set to "0".
inline bool env_switch_off(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string_view(v) == "0";
}

/// A measurement knob's number (GKNN_JOIN_RING_CELLS=800): its value where the variable holds a positive number,
/// else `fallback` (unset, empty, 0, negative or not a number).
inline double env_positive(const char* name, double fallback) {
  const char* v = std::getenv(name);
  const double set = v ? std::strtod(v, nullptr) : 0.0;
  return set > 0 ? set : fallback;
}

}  // namespace gknn::detail
