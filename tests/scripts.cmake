# The project's scripts: scripts/install-deps.sh decides by probing what the build finds (stubbed apt-get/dpkg-query).
add_test(NAME install_deps_test
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/install_deps_test.sh ${PROJECT_SOURCE_DIR}/scripts/install-deps.sh)
set_tests_properties(install_deps_test PROPERTIES LABELS cpu TIMEOUT 300)
