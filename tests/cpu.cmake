# CPU backend: tiling, threads, progress, errors, Index storage, strided and uint8 input, the tile planner.
gknn_test(cpu_search_test LABEL cpu SOURCES cpu_search_test.cpp)
gknn_test(cpu_errors_test LABEL cpu SOURCES cpu_errors_test.cpp)
gknn_test(cpu_index_test LABEL cpu SOURCES cpu_index_test.cpp)
gknn_test(cpu_plan_test LABEL cpu SOURCES cpu_plan_test.cpp)
gknn_test(finalize_test LABEL cpu SOURCES finalize_test.cpp)
gknn_test(cpu_output LABEL cpu SOURCES cpu_output_test.cpp)
# One Index searched from 8 host threads (also the test of `make tsan`, built with -DGKNN_TSAN=ON).
gknn_test(index_threads_test LABEL cpu SOURCES index_threads_test.cpp)
