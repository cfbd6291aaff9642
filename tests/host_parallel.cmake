# The host team's loops of a search call (value scan, staging copies): parts, exact copies, no thread churn.
gknn_test(host_parallel_test LABEL cpu SOURCES host_parallel_test.cpp)
