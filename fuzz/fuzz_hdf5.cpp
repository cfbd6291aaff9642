// libFuzzer harness of the hdf5 target (see targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gknn::fuzz::run_hdf5(data, size);
  return 0;
}
