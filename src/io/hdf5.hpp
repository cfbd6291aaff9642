// hdf5.hpp: single-dataset readers behind load_matrix / load_indices ("file.hdf5:test").
#pragma once

#include <cstdint>
#include <string>

#include "gknn/io.hpp"

namespace gknn::detail::io {

/// A 1-D (one row) or 2-D numeric dataset as float32 / int64; values the target cannot hold exactly are
/// Format errors. Missing dataset: Format naming file and dataset. Without HDF5: Unsupported.
HostMatrix<float> read_hdf5_matrix(const std::string& path, const std::string& dataset);
HostMatrix<int64_t> read_hdf5_indices(const std::string& path, const std::string& dataset);

}  // namespace gknn::detail::io
