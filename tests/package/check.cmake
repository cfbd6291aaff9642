# check.cmake (cmake -P): the CMake package works for a user.
#   1. cmake --install BUILD_DIR into WORK_DIR/prefix;
#   2. a consumer project finds it with find_package(gknn REQUIRED), links the static and the shared library,
#      and both programs answer correctly;
#   3. pkg-config --cflags --libs gknn compiles and links the same program (shared library);
#   4. a consumer configures with add_subdirectory(SOURCE_DIR) and compiles its source against gknn::gknn
#      (the object only: linking would rebuild the whole library, which the project's own tests already link).
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake: -D${var}=... is required")
  endif()
endforeach()
set(here ${CMAKE_CURRENT_LIST_DIR})
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "FAILED (${code}): ${cmd}\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${ARGV0} ${ARGV1} ${ARGV2} ${ARGV3}\n${out}")
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(path include/gknn/gknn.hpp lib/cmake/gknn/gknnConfig.cmake lib/cmake/gknn/gknnConfigVersion.cmake
        lib/pkgconfig/gknn.pc bin/gknn)
  if(NOT EXISTS ${prefix}/${path})
    message(FATAL_ERROR "not installed: ${prefix}/${path}")
  endif()
endforeach()
file(GLOB libraries ${prefix}/lib/libgknn.a ${prefix}/lib/libgknn.so)
list(LENGTH libraries count)
if(NOT count EQUAL 2)
  message(FATAL_ERROR "expected lib/libgknn.a and lib/libgknn.so, found: ${libraries}")
endif()
run(${prefix}/bin/gknn info)

# 2. find_package
set(consumer ${WORK_DIR}/find_package)
run(${CMAKE_COMMAND} -S ${here} -B ${consumer} -G "Unix Makefiles" -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${consumer} -j 2)
run(${consumer}/consumer_static)
run(${consumer}/consumer_shared)  # found through the build RPATH CMake sets for imported shared libraries

# 3. pkg-config
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs gknn OUTPUT_VARIABLE flags RESULT_VARIABLE code
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs gknn failed")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(${CXX_COMPILER} ${here}/consumer.cpp ${flags} -Wl,-rpath,${prefix}/lib -o ${WORK_DIR}/consumer_pc)
  run(${WORK_DIR}/consumer_pc)
else()
  message(STATUS "pkg-config not found: the .pc file is installed but not exercised")
endif()

# 4. add_subdirectory (configure, then compile the consumer's object only)
set(consumer ${WORK_DIR}/add_subdirectory)
run(${CMAKE_COMMAND} -S ${here} -B ${consumer} -G "Unix Makefiles" -DGKNN_SOURCE_DIR=${SOURCE_DIR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${consumer} --target consumer.o)
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "gknn package: install, find_package (static and shared), pkg-config and add_subdirectory all work")
