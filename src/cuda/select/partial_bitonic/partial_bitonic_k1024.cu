// One k-bucket of partial_bitonic (see partial_bitonic_kernel.cuh).
#include "cuda/select/partial_bitonic/partial_bitonic_kernel.cuh"

GKNN_PARTIAL_BITONIC_BUCKET(1024)
