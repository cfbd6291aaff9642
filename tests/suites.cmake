# The parameterised search suite, once per backend.
gknn_test(search_suite_cpu LABEL cpu SOURCES search_suite_test.cpp)
target_compile_definitions(search_suite_cpu PRIVATE GKNN_SUITE_BACKEND=Cpu)
gknn_test(search_suite_gpu LABEL gpu SOURCES search_suite_test.cpp)
target_compile_definitions(search_suite_gpu PRIVATE GKNN_SUITE_BACKEND=Cuda)
# The parameterised selection suite, once per backend.
gknn_test(select_suite_cpu LABEL cpu SOURCES select_suite_test.cpp)
target_compile_definitions(select_suite_cpu PRIVATE GKNN_SUITE_BACKEND=Cpu)
gknn_test(select_suite_gpu LABEL gpu SOURCES select_suite_test.cpp)
target_compile_definitions(select_suite_gpu PRIVATE GKNN_SUITE_BACKEND=Cuda)
# Adversarial data (+-0, all-equal, sorted rows, n = 1, d = 1, d = 4096, k = n, k > n, one off every tile and
# bucket, rejected +-inf/NaN) through every registered distance and selection entry, once per backend.
gknn_test(adversarial_cpu LABEL cpu SOURCES adversarial_test.cpp)
target_compile_definitions(adversarial_cpu PRIVATE GKNN_SUITE_BACKEND=Cpu)
gknn_test(adversarial_gpu LABEL gpu SOURCES adversarial_test.cpp)
target_compile_definitions(adversarial_gpu PRIVATE GKNN_SUITE_BACKEND=Cuda)
