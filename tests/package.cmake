# The CMake package as a user meets it (tests/package/check.cmake): install into a temporary prefix, then build
# a one-file consumer with find_package(gknn), with pkg-config, and configure one with add_subdirectory.
# Not under GKNN_SANITIZE: the consumers are not built with the sanitizers the installed archive needs.
if(GKNN_SANITIZE OR NOT GKNN_INSTALL)
  return()
endif()
add_test(NAME package_test
         COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                 -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/package_test_files -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/package/check.cmake)
set_tests_properties(package_test PROPERTIES LABELS cpu TIMEOUT 600)
