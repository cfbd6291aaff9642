// libFuzzer harness of the npy target (see targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gknn::fuzz::run_npy(data, size);
  return 0;
}
