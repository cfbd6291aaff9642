#include "testing/sanitize.hpp"

#include <cstdlib>
#include <cstring>

namespace gknn::testing {
namespace {

bool from_environment() {
  const char* v = std::getenv("GKNN_TEST_SANITIZE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

bool racecheck_from_environment() {
  const char* v = std::getenv("GKNN_TEST_SANITIZE_TOOL");
  return v != nullptr && std::strcmp(v, "racecheck") == 0;
}

}  // namespace

bool sanitize_mode() {
  static const bool on = from_environment();
  return on;
}

bool racecheck_mode() {
  static const bool on = sanitize_mode() && racecheck_from_environment();
  return on;
}

}  // namespace gknn::testing
