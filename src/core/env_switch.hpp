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

}  // namespace gknn::detail
