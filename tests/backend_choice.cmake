# Which backend `auto` takes when algorithms are forced (gknn::choose_backend); holds with and without a GPU.
# Auto's rules are checked against a table without rows: on a device the built-in table has measured rows for, they
# would decide instead.
gknn_test(backend_choice_test LABEL cpu SOURCES backend_choice_test.cpp)
set_tests_properties(backend_choice_test PROPERTIES ENVIRONMENT
                     "GKNN_PLAN_TABLE=${CMAKE_CURRENT_SOURCE_DIR}/testing/rules_only_plan_table.csv")
