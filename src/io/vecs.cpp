// vecs.cpp: TEXMEX .fvecs / .ivecs / .bvecs. Each row is a little-endian int32 dimension followed by that
// many values (float32, int32 or uint8). All rows of a file must have the dimension of the first.
#include <bit>
#include <cstring>
#include <limits>

#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "io/mapped_file.hpp"
#include "io/row_range.hpp"

namespace gknn {
namespace {

// The formats are little-endian and rows are copied with memcpy.
static_assert(std::endian::native == std::endian::little, "gknn's file readers assume a little-endian host");

constexpr size_t kHeaderBytes = sizeof(int32_t);

int32_t header_at(const detail::io::MappedFile& file, size_t offset) {
  int32_t dim = 0;
  std::memcpy(&dim, file.data() + offset, kHeaderBytes);
  return dim;
}

/// Checks the dimension headers of rows [first, last) against `dim`; Format naming the first row that differs.
void check_headers(const detail::io::MappedFile& file, int64_t dim, size_t row_bytes, int64_t first, int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    int32_t d = header_at(file, static_cast<size_t>(r) * row_bytes);
    if (d != dim)
      detail::fail(ErrorCode::Format, "'", file.path(), "': row ", r, " has dimension ", d,
                   " but row 0 has dimension ", dim);
  }
}

/// Rows and dimension of a mapped vecs file. A size that is not a whole number of rows is reported as the
/// first row whose header differs when there is one (the likelier cause), else as a truncated last row.
VecsShape shape_of(const detail::io::MappedFile& file, size_t element_size) {
  if (file.size() == 0) return {};
  if (file.size() < kHeaderBytes)
    detail::fail(ErrorCode::Format, "'", file.path(), "' is truncated: row 0 has only ", file.size(),
                 " bytes, shorter than its 4-byte dimension header");
  int32_t dim = header_at(file, 0);
  if (dim <= 0)
    detail::fail(ErrorCode::Format, "'", file.path(), "': row 0 has dimension ", dim, " (must be positive)");
  size_t row_bytes = kHeaderBytes + static_cast<size_t>(dim) * element_size;
  auto whole_rows = static_cast<int64_t>(file.size() / row_bytes);
  size_t tail = file.size() % row_bytes;
  if (tail != 0) {
    check_headers(file, dim, row_bytes, 1, whole_rows);
    detail::fail(ErrorCode::Format, "'", file.path(), "' is truncated: row ", whole_rows, " has ", tail,
                 " of its ", row_bytes, " bytes (dimension ", dim, ", ", element_size, "-byte values)");
  }
  return {whole_rows, dim};
}

template <class T>
HostMatrix<T> read_vecs(const std::string& path, int64_t first, int64_t count) {
  detail::io::MappedFile file(path);
  VecsShape shape = shape_of(file, sizeof(T));
  count = detail::io::checked_count(path, shape.rows, first, count);
  size_t row_bytes = kHeaderBytes + static_cast<size_t>(shape.dim) * sizeof(T);
  check_headers(file, shape.dim, row_bytes, first, first + count);
  HostMatrix<T> m(count, shape.dim);
  const size_t value_bytes = static_cast<size_t>(shape.dim) * sizeof(T);
  for (int64_t r = 0; r < count; ++r)
    std::memcpy(m.row(r), file.data() + static_cast<size_t>(first + r) * row_bytes + kHeaderBytes, value_bytes);
  return m;
}

template <class T>
void write_vecs(const std::string& path, MatrixView<const T> m) {
  GKNN_EXPECT(m.rows >= 0 && m.cols >= 0, ErrorCode::InvalidArgument, "cannot write '", path,
              "': negative shape ", m.rows, " x ", m.cols);
  // A row of dimension 0 would make a file no reader (ours included) accepts.
  GKNN_EXPECT(m.rows == 0 || (m.cols > 0 && m.cols <= std::numeric_limits<int32_t>::max()),
              ErrorCode::InvalidArgument, "cannot write '", path, "': vecs rows need 1 to 2^31-1 columns, got ",
              m.cols);
  detail::io::OutputFile out(path);
  const auto dim = static_cast<int32_t>(m.cols);
  for (int64_t r = 0; r < m.rows; ++r) {
    out.write(&dim, kHeaderBytes);
    out.write(m.row(r), static_cast<size_t>(m.cols) * sizeof(T));
  }
  out.close();
}

}  // namespace

HostMatrix<float> read_fvecs(const std::string& path, int64_t first, int64_t count) {
  return read_vecs<float>(path, first, count);
}
HostMatrix<int32_t> read_ivecs(const std::string& path, int64_t first, int64_t count) {
  return read_vecs<int32_t>(path, first, count);
}
HostMatrix<uint8_t> read_bvecs(const std::string& path, int64_t first, int64_t count) {
  return read_vecs<uint8_t>(path, first, count);
}

void write_fvecs(const std::string& path, MatrixView<const float> m) { write_vecs(path, m); }
void write_ivecs(const std::string& path, MatrixView<const int32_t> m) { write_vecs(path, m); }
void write_bvecs(const std::string& path, MatrixView<const uint8_t> m) { write_vecs(path, m); }

VecsShape vecs_shape(const std::string& path, int element_size) {
  GKNN_EXPECT(element_size == 1 || element_size == 4, ErrorCode::InvalidArgument,
              "vecs element size must be 1 (bvecs) or 4 (fvecs, ivecs), got ", element_size);
  detail::io::MappedFile file(path);
  return shape_of(file, static_cast<size_t>(element_size));
}

}  // namespace gknn
