# The measured plan table (src/plan/): parsing, errors naming the line, the nearest-cell rule, $GKNN_PLAN_TABLE.
gknn_test(plan_table_test LABEL cpu SOURCES plan_table_test.cpp)
target_include_directories(plan_table_test PRIVATE ${PROJECT_BINARY_DIR}/src/generated)  # the built-in table
if(GKNN_HAS_CUDA)
  gknn_test(gpu_plan_test LABEL gpu SOURCES gpu_plan_test.cpp)  # its own process: the table is read once
endif()
