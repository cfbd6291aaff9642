# Replays every seed (fuzz/corpus/) and every input the fuzzers once broke gknn with (fuzz/regressions/) through
# the harness targets: each must end in success or gknn::Error, never a crash (see fuzz/README.md).
gknn_test(fuzz_regressions_test LABEL cpu SOURCES fuzz_regressions_test.cpp TIMEOUT 120 STATIC_GKNN)
target_link_libraries(fuzz_regressions_test PRIVATE gknn_fuzz_targets)
target_compile_definitions(fuzz_regressions_test PRIVATE GKNN_FUZZ_DIR="${PROJECT_SOURCE_DIR}/fuzz")
# Under `make sanitize`, as in scripts/fuzz.sh: libhdf5's own leaks on corrupt files are suppressed (see the file),
# and a C malloc of an absurd size returns NULL as glibc's does (libhdf5 handles it; operator new still aborts).
set_tests_properties(fuzz_regressions_test PROPERTIES ENVIRONMENT
                     "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/fuzz/lsan.supp:print_suppressions=0;ASAN_OPTIONS=allocator_may_return_null=1")
