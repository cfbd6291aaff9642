# bench/suite/report.py (issue 13's suite report) on a hand-made partial grid, as `bench/suite/run.sh --budget` leaves
# it between slices: the Markdown's counts, worst ratio and panel values always (python3 only); the heat-map PNG as
# a test of its own that ctest reports as skipped (exit 77) where the python3 on the PATH has no matplotlib.
find_program(GKNN_SUITE_PYTHON3 python3 NO_CACHE)
if(GKNN_SUITE_PYTHON3)
  foreach(part markdown png)
    add_test(NAME suite_report_${part}_test
             COMMAND ${GKNN_SUITE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/report_suite_test.py
                     ${PROJECT_SOURCE_DIR}/bench/suite/report.py ${part})
    set_tests_properties(suite_report_${part}_test PROPERTIES LABELS cpu TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()
