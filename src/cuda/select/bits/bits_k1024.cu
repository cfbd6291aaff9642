// One k-bucket of bits (see bits_kernel.cuh).
#include "cuda/select/bits/bits_kernel.cuh"

GKNN_BITS_BUCKET(1024)
