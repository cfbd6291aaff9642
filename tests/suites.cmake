# The parameterised search suite, once per backend.
gknn_test(search_suite_cpu LABEL cpu SOURCES search_suite_test.cpp)
target_compile_definitions(search_suite_cpu PRIVATE GKNN_SUITE_BACKEND=Cpu)
gknn_test(search_suite_gpu LABEL gpu SOURCES search_suite_test.cpp)
target_compile_definitions(search_suite_gpu PRIVATE GKNN_SUITE_BACKEND=Cuda)
# The parameterised selection suite, once per backend.
gknn_test(select_suite_cpu LABEL cpu SOURCES select_suite_test.cpp)
target_compile_definitions(select_suite_cpu PRIVATE GKNN_SUITE_BACKEND=Cpu)
# On the GPU in parts (Tang's queues x 8 option sets, below; the large-k selectors; the rest), run side by side; the
# whole suite outlasted 150 s on the H100 (2026-11-23), the parts name the slow one.
set(tang_parts "*_queue*")
set(large_k_parts "*sample_select*:*radix_select*")
gknn_test(select_suite_gpu LABEL gpu TIMEOUT 600 SOURCES select_suite_test.cpp
          ARGS --gtest_filter=-${tang_parts}:${large_k_parts})
target_compile_definitions(select_suite_gpu PRIVATE GKNN_SUITE_BACKEND=Cuda)
# Tang's queues in four parts: one thread per row keeps a queue of up to k = 1024 entries, so the adversarial rows
# (every key a candidate) take seconds per combination; the four insertion queues without +hp alone took 164 s of
# make test in one part (2026-11-24), the other twenty 153 s.
gknn_test_part(select_suite_gpu tang_insertion "*insertion_queue:*insertion_queue_aligned")
gknn_test_part(select_suite_gpu tang_insertion_buffered "*insertion_queue_buffered:*insertion_queue_aligned_buffered")
gknn_test_part(select_suite_gpu tang_heap "*heap_queue*")
gknn_test_part(select_suite_gpu tang_merge "*merge_queue*:*insertion_queue*_hp")
gknn_test_part(select_suite_gpu large_k ${large_k_parts})
# Adversarial data (+-0, all-equal, sorted rows, n = 1, d = 1, d = 4096, k = n, k > n, one off every tile and
# bucket, rejected +-inf/NaN) through every registered distance and selection entry, once per backend.
gknn_test(adversarial_cpu LABEL cpu SOURCES adversarial_test.cpp)
target_compile_definitions(adversarial_cpu PRIVATE GKNN_SUITE_BACKEND=Cpu)
gknn_test(adversarial_gpu LABEL gpu SOURCES adversarial_test.cpp)
target_compile_definitions(adversarial_gpu PRIVATE GKNN_SUITE_BACKEND=Cuda)
