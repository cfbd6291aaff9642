# Row-range reading of matrix files (load_matrix_rows, matrix_shape, npy ranges): what MPI ranks read.
gknn_test(io_rows_test LABEL cpu SOURCES io_rows_test.cpp)
