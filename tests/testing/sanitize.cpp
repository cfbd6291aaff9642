#include "testing/sanitize.hpp"

#include <cstdlib>
#include <cstring>

namespace gknn::testing {
namespace {

bool from_environment() {
  const char* v = std::getenv("GKNN_TEST_SANITIZE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace

bool sanitize_mode() {
  static const bool on = from_environment();
  return on;
}

}  // namespace gknn::testing
