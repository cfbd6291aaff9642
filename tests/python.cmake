# The Python module's pytest suite (tests/python), run with the interpreter the module was built for.
# python_test (cpu): everything but the GPU tests; python_gpu_test (gpu): torch/cupy CUDA tensors, exits 77
# (skipped, reason printed) without a GPU or without torch/cupy.
if(NOT GKNN_HAS_PYTHON)
  return()
endif()
set(GKNN_PYTEST_ENV PYTHONPATH=${PROJECT_BINARY_DIR}/python GKNN_CLI=$<TARGET_FILE:gknn_cli> PYTHONDONTWRITEBYTECODE=1)
foreach(label cpu gpu)
  set(name python_test)
  if(label STREQUAL "gpu")
    set(name python_gpu_test)
  endif()
  add_test(NAME ${name} COMMAND ${GKNN_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/run.py ${label})
  set_tests_properties(${name} PROPERTIES LABELS ${label} ENVIRONMENT "${GKNN_PYTEST_ENV}" SKIP_RETURN_CODE 77
                       TIMEOUT 600)
endforeach()
