// One k-bucket of bits_global (see bits/bits_kernel.cuh).
#include "cuda/select/bits/bits_kernel.cuh"

GKNN_BITS_GLOBAL_BUCKET(1024)
