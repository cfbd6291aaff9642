# The one list of algorithms (include/gknn/algorithms.def) against the names and every backend's registry.
gknn_test(registry_test LABEL cpu SOURCES registry_test.cpp)
