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
