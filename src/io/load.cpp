// load.cpp: choose a reader or writer by file name, as the CLI and benchmarks do.
#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <utility>

#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "io/convert.hpp"
#include "io/hdf5.hpp"
#include "io/row_range.hpp"

namespace gknn {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && lower(s.substr(s.size() - suffix.size())) == suffix;
}

bool is_hdf5_name(const std::string& path) { return ends_with(path, ".hdf5") || ends_with(path, ".h5"); }

/// "file.hdf5:test" -> {"file.hdf5", "test"}. Only a colon after an HDF5 file name selects a dataset, so
/// other paths may contain colons.
struct Source {
  std::string file;
  std::string dataset;
};
Source split_dataset(const std::string& path, const std::string& default_dataset) {
  size_t colon = path.rfind(':');
  if (colon != std::string::npos && is_hdf5_name(path.substr(0, colon)))
    return {path.substr(0, colon), path.substr(colon + 1)};
  return {path, default_dataset};
}

[[noreturn]] void unknown_extension(const std::string& path, const char* purpose, const char* accepted) {
  detail::fail(ErrorCode::InvalidArgument, "cannot ", purpose, " '", path, "': unknown file extension (accepted: ",
               accepted, ")");
}

template <class T>
HostMatrix<float> to_float_matrix(const HostMatrix<T>& m, const std::string& path) {
  HostMatrix<float> out(m.rows, m.cols);
  detail::io::convert_to_float<T>(reinterpret_cast<const unsigned char*>(m.data.data()), m.data.size(),
                                 out.data.data(), {path, m.cols});
  return out;
}

}  // namespace

HostMatrix<float> load_matrix(const std::string& path) {
  Source src = split_dataset(path, "train");
  if (is_hdf5_name(src.file)) {
    if (src.dataset.empty()) detail::fail(ErrorCode::InvalidArgument, "'", path, "': empty dataset name after ':'");
    return detail::io::read_hdf5_matrix(src.file, src.dataset);
  }
  if (ends_with(path, ".fvecs")) return read_fvecs(path);
  if (ends_with(path, ".bvecs")) return to_float_matrix(read_bvecs(path), path);
  if (ends_with(path, ".npy")) return read_npy_float(path);
  unknown_extension(path, "load a matrix from", ".fvecs, .bvecs, .npy, .hdf5[:dataset], .h5[:dataset]");
}

MatrixShape matrix_shape(const std::string& path) {
  if (ends_with(path, ".fvecs") || ends_with(path, ".bvecs")) {
    const VecsShape shape = vecs_shape(path, ends_with(path, ".bvecs") ? 1 : 4);
    return {shape.rows, shape.dim};
  }
  if (ends_with(path, ".npy")) return npy_shape(path);
  const HostMatrix<float> whole = load_matrix(path);
  return {whole.rows, whole.cols};
}

HostMatrix<float> load_matrix_rows(const std::string& path, int64_t first, int64_t count) {
  if (ends_with(path, ".fvecs")) return read_fvecs(path, first, count);
  if (ends_with(path, ".bvecs")) return to_float_matrix(read_bvecs(path, first, count), path);
  if (ends_with(path, ".npy")) return read_npy_float(path, first, count);
  const HostMatrix<float> whole = load_matrix(path);
  count = detail::io::checked_count(path, whole.rows, first, count);
  HostMatrix<float> part(count, whole.cols);
  std::copy(whole.row(first), whole.row(first) + count * whole.cols, part.data.begin());
  return part;
}

HostMatrix<int64_t> load_indices(const std::string& path) {
  Source src = split_dataset(path, "neighbors");
  if (is_hdf5_name(src.file)) {
    if (src.dataset.empty()) detail::fail(ErrorCode::InvalidArgument, "'", path, "': empty dataset name after ':'");
    return detail::io::read_hdf5_indices(src.file, src.dataset);
  }
  if (ends_with(path, ".ivecs")) {
    HostMatrix<int32_t> narrow = read_ivecs(path);
    HostMatrix<int64_t> wide(narrow.rows, narrow.cols);
    std::copy(narrow.data.begin(), narrow.data.end(), wide.data.begin());
    return wide;
  }
  if (ends_with(path, ".npy")) return read_npy_int64(path);
  unknown_extension(path, "load indices from", ".ivecs, .npy, .hdf5[:dataset], .h5[:dataset]");
}

void save_indices(const std::string& path, MatrixView<const int64_t> m) {
  if (ends_with(path, ".npy")) return write_npy(path, m);
  if (!ends_with(path, ".ivecs")) unknown_extension(path, "save indices to", ".ivecs, .npy");
  HostMatrix<int32_t> narrow(m.rows, m.cols);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) {
      int64_t v = m.row(r)[c];
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        detail::fail(ErrorCode::Format, "cannot save '", path, "': index ", v, " at row ", r, ", column ", c,
                     " does not fit the int32 of .ivecs (use .npy)");
      narrow.row(r)[c] = static_cast<int32_t>(v);
    }
  write_ivecs(path, std::as_const(narrow).view());
}

void save_matrix(const std::string& path, MatrixView<const float> m) {
  if (ends_with(path, ".npy")) return write_npy(path, m);
  if (ends_with(path, ".fvecs")) return write_fvecs(path, m);
  unknown_extension(path, "save a matrix to", ".fvecs, .npy");
}

}  // namespace gknn
