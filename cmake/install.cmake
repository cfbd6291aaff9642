# install.cmake: what `cmake --install` puts under the prefix, and the CMake/pkg-config packages that let other
# projects use it:
#   include/gknn/*.hpp                      public headers (compile without nvcc)
#   lib/libgknn.a, lib/libgknn.so           static (gknn::gknn) and shared (gknn::gknn_shared) library
#   bin/gknn                                the command-line tool
#   lib/cmake/gknn/gknnConfig*.cmake        find_package(gknn) with exported targets and their dependencies
#   lib/pkgconfig/gknn.pc                   pkg-config --cflags --libs gknn (shared library)
#   <GKNN_PYTHON_INSTALL_DIR>/gknn          the Python package (python/CMakeLists.txt), when built
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

option(GKNN_INSTALL "Generate the install rules (on by default when gknn is the top-level project)" ${PROJECT_IS_TOP_LEVEL})
option(GKNN_BUILD_SHARED "Build the shared library libgknn.so beside the static one" ON)

# The shared library is the static archive linked whole (one compilation of the sources, which are already
# position-independent): no second CUDA build.
if(GKNN_BUILD_SHARED)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/gknn_shared.cpp "// libgknn.so: every object of libgknn.a (WHOLE_ARCHIVE)\n")
  add_library(gknn_shared SHARED ${CMAKE_CURRENT_BINARY_DIR}/gknn_shared.cpp)
  add_library(gknn::gknn_shared ALIAS gknn_shared)
  target_link_libraries(gknn_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,gknn>")
  target_include_directories(gknn_shared PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(gknn_shared PUBLIC cxx_std_20)
  if(GKNN_HAS_CUDA)
    target_compile_definitions(gknn_shared PUBLIC GKNN_HAS_CUDA=1)
  endif()
  set_target_properties(gknn_shared PROPERTIES OUTPUT_NAME gknn EXPORT_NAME gknn_shared VERSION ${PROJECT_VERSION}
                                               SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
endif()

if(NOT GKNN_INSTALL)
  return()
endif()

set(GKNN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gknn)
set_target_properties(gknn PROPERTIES EXPORT_NAME gknn)
set(targets gknn gknn_cli)
if(GKNN_BUILD_SHARED)
  list(APPEND targets gknn_shared)
endif()
install(TARGETS ${targets} EXPORT gknnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gknn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
install(EXPORT gknnTargets NAMESPACE gknn:: DESTINATION ${GKNN_CMAKE_DIR} COMPONENT development)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/gknnConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/gknnConfig.cmake INSTALL_DESTINATION ${GKNN_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gknnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gknnConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/gknnConfigVersion.cmake
        DESTINATION ${GKNN_CMAKE_DIR} COMPONENT development)

# pkg-config describes the shared library (a static link needs the private libraries too: --static).
set(GKNN_PC_CFLAGS "-std=c++20")
set(GKNN_PC_LIBS_PRIVATE "-fopenmp -lopenblas -lpthread")
if(GKNN_HAS_CUDA)
  string(APPEND GKNN_PC_CFLAGS " -DGKNN_HAS_CUDA=1")
  string(APPEND GKNN_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcublas -lcudart")
endif()
if(GKNN_HAS_HDF5)
  string(APPEND GKNN_PC_LIBS_PRIVATE " -lhdf5")
endif()
# Relocatable: the prefix is found from the .pc file's own place, so `cmake --install --prefix P` works.
file(RELATIVE_PATH GKNN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/gknn.pc.in ${CMAKE_CURRENT_BINARY_DIR}/gknn.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gknn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)
