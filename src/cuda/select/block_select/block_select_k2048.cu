// One k-bucket of block_select (see warp_select/warp_queue_kernel.cuh).
#include "cuda/select/warp_select/warp_queue_kernel.cuh"

GKNN_BLOCK_SELECT_BUCKET(2048)
