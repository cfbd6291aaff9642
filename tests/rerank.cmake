# The exactness guard (src/core/guard.hpp, rerank.hpp): its certificate and retries on a CPU emulation of a GEMM on
# inputs rounded to TF32 / bf16 mantissas; then the guard through the public API, once per backend (every float
# distance path of the backend, Index, ShardedIndex, one-ulp near ties, overflow, forced selections).
gknn_test(rerank_test LABEL cpu SOURCES rerank_test.cpp)
gknn_test(guard_cpu LABEL cpu SOURCES guard_test.cpp)
target_compile_definitions(guard_cpu PRIVATE GKNN_SUITE_BACKEND=Cpu)
gknn_test(guard_gpu LABEL gpu SOURCES guard_test.cpp)
target_compile_definitions(guard_gpu PRIVATE GKNN_SUITE_BACKEND=Cuda)
# Every guard test again with the certificate's per-thread kernel (cuda/hooks.hpp set_staged_certificate_enabled;
# the staged one is the default): both give the same float64 keys bit for bit.
gknn_test_part(guard_gpu per_thread_certificate "*")
set_tests_properties(guard_gpu_per_thread_certificate PROPERTIES ENVIRONMENT GKNN_STAGED_CERTIFICATE=0)
# The TF32 arithmetic of the tf32 / tf32x3 paths (src/cuda/distance/cublas/tf32_split.hpp: host and device share
# it) and its keys within the guard's bounds, on the CPU.
gknn_test(tf32_split_test LABEL cpu SOURCES tf32_split_test.cpp)
