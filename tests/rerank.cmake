# The exactness guard of lower-precision squared-L2 paths (src/core/rerank.hpp): a CPU emulation of a GEMM on
# inputs rounded to TF32 / bf16 mantissas, re-ranked and certified, against the float64 oracle.
gknn_test(rerank_test LABEL cpu SOURCES rerank_test.cpp)
