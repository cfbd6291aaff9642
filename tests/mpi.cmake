# The MPI layer under mpiexec with 1, 2, 3 and 4 ranks (as ArborX tests DistributedTree), when MPI is found.
# CI runs as root on 2 cores: OpenMPI needs its run-as-root and oversubscribe switches (environment variables,
# which other MPI implementations ignore). LeakSanitizer is off: OpenMPI keeps allocations until exit.
# (also used by shard.cmake's scale_cli_test)
set(GKNN_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
      OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0)
if(GKNN_HAS_MPI)
  add_executable(mpi_search_test mpi_search_test.cpp)
  target_link_libraries(mpi_search_test PRIVATE gknn_testing_static gknn_mpi)
  foreach(ranks 1 2 3 4)
    add_test(NAME mpi_search_np${ranks}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS}
                     $<TARGET_FILE:mpi_search_test> ${MPIEXEC_POSTFLAGS})
    set_tests_properties(mpi_search_np${ranks} PROPERTIES LABELS cpu TIMEOUT 300 PROCESSORS ${ranks}
                         ENVIRONMENT "${GKNN_MPI_TEST_ENV}" WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endforeach()
  if(GKNN_HAS_CUDA)  # ranks sharing CUDA device 0; exits 77 (skipped) without a device
    foreach(ranks 1 2 3 4)
      add_test(NAME gpu_mpi_search_np${ranks}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS}
                       $<TARGET_FILE:mpi_search_test> --cuda ${MPIEXEC_POSTFLAGS})
      set_tests_properties(gpu_mpi_search_np${ranks} PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77
                           ENVIRONMENT "${GKNN_MPI_TEST_ENV}" WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    endforeach()
  endif()
endif()
