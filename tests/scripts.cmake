# The project's scripts: scripts/install-deps.sh decides by probing what the build finds (stubbed apt-get/dpkg-query).
# The optional packages this configure did not find are passed on: the script may (and must) ask apt-get for those
# alone, so the test holds on a machine that lacks them (e.g. a GPU host without nlohmann-json) as well as on CI.
set(GKNN_DEPS_MISSING_OPTIONAL "")
if(NOT GKNN_HAS_HDF5)
  list(APPEND GKNN_DEPS_MISSING_OPTIONAL libhdf5-dev)
endif()
find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  list(APPEND GKNN_DEPS_MISSING_OPTIONAL nlohmann-json3-dev)
endif()
list(JOIN GKNN_DEPS_MISSING_OPTIONAL " " GKNN_DEPS_MISSING_OPTIONAL)
add_test(NAME install_deps_test
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/install_deps_test.sh ${PROJECT_SOURCE_DIR}/scripts/install-deps.sh
                 "${GKNN_DEPS_MISSING_OPTIONAL}")
set_tests_properties(install_deps_test PROPERTIES LABELS cpu TIMEOUT 300)
