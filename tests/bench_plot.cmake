# bench/gpu/plot_distance.py (issue 12: each distance stage against its ceilings, from gknn_gpu_bench's CSV) on a
# hand-made CSV: the parsing and the per-(distance, config, k) aggregation always; the PNG where the python3 on the
# PATH has matplotlib, else the test says that part is skipped.
find_program(GKNN_PLOT_PYTHON3 python3 NO_CACHE)
if(GKNN_PLOT_PYTHON3)
  add_test(NAME plot_distance_test
           COMMAND ${GKNN_PLOT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/plot_distance_test.py
                   ${PROJECT_SOURCE_DIR}/bench/gpu/plot_distance.py
                   ${CMAKE_CURRENT_SOURCE_DIR}/scripts/plot_distance_input.csv)
  set_tests_properties(plot_distance_test PROPERTIES LABELS cpu TIMEOUT 120)
endif()
