// sanitize.hpp: the sanitizer-sized mode of the GPU tests. compute-sanitizer slows kernels down 10-100x, so
// under GKNN_TEST_SANITIZE=1 in the environment (scripts/device-check.sh --sanitize sets it) the tests pick
// smaller inputs that still reach every code path: partial tiles, every k bucket, every selector and
// distance kernel, every Tang combination, the large-k passes and batching. Each use names both sizes, so
// the reduced size is chosen where the edge it must keep (one off a tile, above a bucket) is visible.
#pragma once

#include <cstdint>

namespace gknn::testing {

/// True when GKNN_TEST_SANITIZE is set to anything but "" or "0". Read once; usable during static
/// initialisation (parameter lists of INSTANTIATE_TEST_SUITE_P are built before main).
bool sanitize_mode();

/// True in the sanitizer-sized run under racecheck (GKNN_TEST_SANITIZE_TOOL=racecheck, which
/// scripts/sanitize-gpu-tests.sh sets with the tool's name). racecheck checks shared-memory hazards, whose protocol is
/// one per kernel template: the instantiations for the other metrics (the same tiles, another arithmetic) are checked
/// once, on one case, and by the other three tools on every case. racecheck took the most job-seconds of the four
/// (3727 of 8600, 2026-11-25).
bool racecheck_mode();

/// `normal` in the normal run, `sanitized` in the sanitizer-sized run.
template <class T>
T sized(T normal, T sanitized) {
  return sanitize_mode() ? sanitized : normal;
}

}  // namespace gknn::testing
