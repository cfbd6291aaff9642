# The host side of a search call: the host team's loops (value scan, staging copies: parts, exact copies, no
# thread churn) and the output tiles a CUDA search keeps in flight.
gknn_test(host_parallel_test LABEL cpu SOURCES host_parallel_test.cpp)
gknn_test(output_slots_test LABEL cpu SOURCES output_slots_test.cpp)
gknn_test(host_array_test LABEL cpu SOURCES host_array_test.cpp)
