// One k-bucket of warp_select (see warp_queue_kernel.cuh).
#include "cuda/select/warp_select/warp_queue_kernel.cuh"

GKNN_WARP_SELECT_BUCKET(2048)
