// libFuzzer harness of the vecs target (see targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gknn::fuzz::run_vecs(data, size);
  return 0;
}
