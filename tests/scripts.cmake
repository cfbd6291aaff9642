# The project's scripts: scripts/install-deps.sh decides by probing what the build finds (stubbed apt-get/dpkg-query).
# The optional packages this configure did not find are passed on: the script may ask apt-get for those alone, so
# the test holds on a machine that lacks them (e.g. a GPU host without nlohmann-json) as well as on CI.
# Programs are looked up as the script looks them up (`command -v`: the PATH only, never cached), so a tool found
# by CMake elsewhere (its own prefix, a stale cache entry) does not make the two disagree.
set(GKNN_DEPS_MISSING_OPTIONAL "")
if(NOT GKNN_HAS_HDF5)
  list(APPEND GKNN_DEPS_MISSING_OPTIONAL libhdf5-dev)
endif()
find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  list(APPEND GKNN_DEPS_MISSING_OPTIONAL nlohmann-json3-dev)
endif()
# The Python module's packages, probed as the script probes them (same order as its requirement list).
block(PROPAGATE GKNN_DEPS_MISSING_OPTIONAL)
  find_package(Python 3.8 QUIET COMPONENTS Interpreter Development.Module)
  if(NOT Python_FOUND)
    list(APPEND GKNN_DEPS_MISSING_OPTIONAL python3-dev)
  endif()
  find_program(path_python3 NAMES python3 NO_CACHE NO_DEFAULT_PATH PATHS ENV PATH)
  set(PYBIND11_NOPYTHON ON)
  find_package(pybind11 CONFIG QUIET)
  if(NOT pybind11_FOUND)  # the script's fallback, as the build's: a pip pybind11 of either interpreter
    foreach(python ${path_python3} /usr/bin/python3)
      if(EXISTS ${python} AND NOT pybind11_FOUND)
        execute_process(COMMAND ${python} -m pybind11 --cmakedir RESULT_VARIABLE code OUTPUT_QUIET ERROR_QUIET)
        if(code EQUAL 0)
          set(pybind11_FOUND ON)
        endif()
      endif()
    endforeach()
  endif()
  if(NOT pybind11_FOUND)
    list(APPEND GKNN_DEPS_MISSING_OPTIONAL pybind11-dev)
  endif()
  find_package(dlpack CONFIG QUIET)
  if(NOT dlpack_FOUND)
    list(APPEND GKNN_DEPS_MISSING_OPTIONAL libdlpack-dev)
  endif()
  foreach(module numpy pytest)
    set(found OFF)
    foreach(python ${path_python3} /usr/bin/python3)
      if(EXISTS ${python})
        execute_process(COMMAND ${python} -c "import ${module}" RESULT_VARIABLE code OUTPUT_QUIET ERROR_QUIET)
        if(code EQUAL 0)
          set(found ON)
        endif()
      endif()
    endforeach()
    if(NOT found)
      list(APPEND GKNN_DEPS_MISSING_OPTIONAL python3-${module})
    endif()
  endforeach()
endblock()
# The probes of install-deps.sh's other optional lines (file and command kinds), mirrored.
if(NOT GKNN_NANOFLANN_INCLUDE)
  list(APPEND GKNN_DEPS_MISSING_OPTIONAL libnanoflann-dev)
endif()
block(PROPAGATE GKNN_DEPS_MISSING_OPTIONAL)
  find_package(MPI QUIET COMPONENTS CXX)
  if(NOT MPI_CXX_FOUND)
    list(APPEND GKNN_DEPS_MISSING_OPTIONAL libopenmpi-dev)
  endif()
  find_program(mpiexec_program mpiexec NO_CACHE NO_DEFAULT_PATH PATHS ENV PATH)
  if(NOT mpiexec_program)
    list(APPEND GKNN_DEPS_MISSING_OPTIONAL openmpi-bin)
  endif()
  find_program(clangxx_program clang++ NO_CACHE NO_DEFAULT_PATH PATHS ENV PATH)
  if(NOT clangxx_program)
    list(APPEND GKNN_DEPS_MISSING_OPTIONAL clang)
  endif()
  foreach(entry "libfuzzer-14-dev=/usr/lib/llvm-*/lib/libFuzzer.a"
                "libclang-rt-14-dev=/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"
                "libomp-dev=/usr/lib/llvm-*/lib/libomp.so*")
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 package)
    list(GET pair 1 pattern)
    file(GLOB matches ${pattern})
    if(NOT matches)
      list(APPEND GKNN_DEPS_MISSING_OPTIONAL ${package})
    endif()
  endforeach()
endblock()
list(JOIN GKNN_DEPS_MISSING_OPTIONAL " " GKNN_DEPS_MISSING_OPTIONAL)
string(REPLACE ";" "\\;" GKNN_TEST_PREFIX_PATH "${CMAKE_PREFIX_PATH}")  # one argument, as the build passes it
add_test(NAME install_deps_test
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/install_deps_test.sh ${PROJECT_SOURCE_DIR}/scripts/install-deps.sh
                 "${GKNN_DEPS_MISSING_OPTIONAL}" "${GKNN_TEST_PREFIX_PATH}")
set_tests_properties(install_deps_test PROPERTIES LABELS cpu TIMEOUT 300)
# scripts/sanitize-gpu-tests.sh's bookkeeping (shards, CTest environment, leak check, summed counts, not-clean tests)
# against a hand-written CTest tree with a stub compute-sanitizer: the real tool needs a GPU.
add_test(NAME sanitize_gpu_tests_test
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/sanitize_gpu_tests_test.sh
                 ${PROJECT_SOURCE_DIR}/scripts/sanitize-gpu-tests.sh)
set_tests_properties(sanitize_gpu_tests_test PROPERTIES LABELS cpu TIMEOUT 120
                     ENVIRONMENT "CTEST=${CMAKE_CTEST_COMMAND}")
# scripts/touch-changed-sources.sh (device-check.sh's guard against sources copied in with old times) on a temp tree.
add_test(NAME touch_changed_sources_test
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/touch_changed_sources_test.sh
                 ${PROJECT_SOURCE_DIR}/scripts/touch-changed-sources.sh)
set_tests_properties(touch_changed_sources_test PROPERTIES LABELS cpu TIMEOUT 60)
