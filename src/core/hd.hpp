// hd.hpp: lets small helpers compile for both host and device.
#pragma once
#if defined(__CUDACC__)
#define GKNN_HD __host__ __device__ __forceinline__
#else
#define GKNN_HD inline
#endif
