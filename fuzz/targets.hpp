// targets.hpp: what each fuzz harness does with one input, shared by the libFuzzer harnesses (fuzz_*.cpp) and
// the regression test (tests/fuzz_regressions_test.cpp) that replays fuzz/corpus/ and fuzz/regressions/.
//
// The readers take a path, so an input is written to a file in a private temporary directory first. Each target
// accepts exactly two outcomes: success with a consistent shape, or gknn::Error (a CLI11 usage error as well for
// the command line). Anything else (another exception, an inconsistent matrix) prints what happened and aborts,
// which libFuzzer records as a crash and CTest as a failure; ASan/UBSan report memory errors and undefined
// behaviour; libFuzzer's -malloc_limit_mb catches a reader that trusts a size in a header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gknn::fuzz {

void run_vecs(const uint8_t* data, size_t size);  ///< fvecs / ivecs / bvecs readers, shape probe, row ranges
void run_npy(const uint8_t* data, size_t size);   ///< .npy readers (raw, float32, int64)
void run_hdf5(const uint8_t* data, size_t size);  ///< ann-benchmarks HDF5 reader and single-dataset loaders
void run_cli(const uint8_t* data, size_t size);   ///< arguments split at NUL bytes: parse_bytes, the gknn app

}  // namespace gknn::fuzz
