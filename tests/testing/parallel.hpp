// parallel.hpp: host-side checks of large GPU outputs spread over a few threads. Four GPU tests run side by side on
// the 16-core test machine (tests/CMakeLists.txt, GPU lanes), each with its host side on one thread; a check of
// 10^7 entries per call made the host, not the device, the long pole of gpu_large_k.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace gknn::testing {

/// Runs check(i) for every i in [0, count) on up to `threads` threads (0: min(4, hardware threads)) and returns the
/// message of the smallest i whose check failed, "" when every check returned "". An exception thrown by check(i)
/// counts as that item's failure, with its what().
std::string first_failure(int64_t count, const std::function<std::string(int64_t)>& check, int threads = 0);

}  // namespace gknn::testing
