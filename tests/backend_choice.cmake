# Which backend `auto` takes when algorithms are forced (gknn::choose_backend); holds with and without a GPU.
gknn_test(backend_choice_test LABEL cpu SOURCES backend_choice_test.cpp)
