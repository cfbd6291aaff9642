// npy.cpp: NumPy .npy files. Layout: "\x93NUMPY", version (major, minor), header length (uint16 LE for
// version 1, uint32 LE for versions 2 and 3), then a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (rows, cols), }
// padded with spaces and a newline to a multiple of 64 bytes, then the raw C-order payload.
#include <bit>
#include <cctype>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "io/convert.hpp"
#include "io/mapped_file.hpp"
#include "io/row_range.hpp"

namespace gknn {
namespace {

static_assert(std::endian::native == std::endian::little, "gknn's file readers assume a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";

struct DTypeName {
  std::string_view descr;
  DType dtype;
};
// Single-byte values have no byte order: numpy writes '|u1', some writers '<u1'.
constexpr DTypeName kDTypes[] = {{"<f4", DType::Float32}, {"<f8", DType::Float64}, {"|u1", DType::UInt8},
                                 {"<u1", DType::UInt8},   {"<i4", DType::Int32},   {"<i8", DType::Int64}};

size_t item_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::UInt8: return 1;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
  }
  return 0;
}

std::string_view descr_of(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.descr;
  return "?";
}

struct NpyLayout {
  DType dtype = DType::Float32;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t data_offset = 0;
};

/// Just enough of a Python literal parser for the header dict numpy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  NpyLayout parse() {
    bool have_descr = false, have_order = false, have_shape = false;
    NpyLayout layout;
    expect('{');
    while (!consume('}')) {
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        layout.dtype = dtype(value_string("descr"));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (word() != "False") fail("Fortran-order arrays are not supported (save a C-order array)");
        have_order = true;
      } else if (key == "shape") {
        set_shape(layout);
        have_shape = true;
      } else {
        fail("unexpected header key '" + key + "'");
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    if (!have_descr || !have_shape || !have_order) fail("header lacks 'descr', 'fortran_order' or 'shape'");
    return layout;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    detail::fail(ErrorCode::Format, "'", path_, "' is not a supported .npy file: ", problem);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("malformed header dict, expected '") + c + "' at offset " + std::to_string(pos_));
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("malformed header dict, expected a string");
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string_view::npos) fail("malformed header dict, unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  /// A structured dtype is a list, not a string: name that case rather than calling the header malformed.
  std::string value_string(const char* key) {
    skip_space();
    if (pos_ < s_.size() && (s_[pos_] == '[' || s_[pos_] == '('))
      fail(std::string("structured dtypes are not supported ('") + key + "' is a list)");
    return string_literal();
  }
  std::string word() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  int64_t integer() {
    skip_space();
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (v > (INT64_MAX - 9) / 10) fail("shape dimension too large");
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (pos_ == start) fail("malformed shape, expected a non-negative integer");
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long literal
    return v;
  }
  void set_shape(NpyLayout& layout) {
    expect('(');
    std::vector<int64_t> dims;
    while (!consume(')')) {
      dims.push_back(integer());
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    if (dims.empty()) fail("0-dimensional arrays are not supported (need 1 or 2 dimensions)");
    if (dims.size() > 2) fail(std::to_string(dims.size()) + "-dimensional arrays are not supported (need 1 or 2)");
    layout.rows = dims.size() == 2 ? dims[0] : 1;
    layout.cols = dims.back();
  }
  DType dtype(const std::string& descr) const {
    for (const auto& d : kDTypes)
      if (descr == d.descr) return d.dtype;
    if (!descr.empty() && descr[0] == '>') fail("big-endian dtype '" + descr + "' is not supported");
    if (descr.find('O') != std::string::npos) fail("object arrays are not supported");
    fail("unsupported dtype '" + descr + "' (supported: <f4, <f8, |u1, <i4, <i8)");
  }

  std::string_view s_;
  size_t pos_ = 0;
  const std::string& path_;
};

uint32_t little_endian(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

NpyLayout parse_layout(const detail::io::MappedFile& file) {
  const std::string& path = file.path();
  const unsigned char* p = file.data();
  if (file.size() < 10 || std::memcmp(p, kMagic.data(), kMagic.size()) != 0)
    detail::fail(ErrorCode::Format, "'", path, "' is not a .npy file (no \\x93NUMPY magic)");
  int major = p[6];
  if (major < 1 || major > 3)
    detail::fail(ErrorCode::Format, "'", path, "' has unsupported .npy version ", major, ".", int(p[7]));
  int length_bytes = major == 1 ? 2 : 4;
  size_t prefix = 8 + static_cast<size_t>(length_bytes);
  if (file.size() < prefix) detail::fail(ErrorCode::Format, "'", path, "' is truncated inside its .npy header");
  size_t header_len = little_endian(p + 8, length_bytes);
  if (file.size() - prefix < header_len)
    detail::fail(ErrorCode::Format, "'", path, "' is truncated: its .npy header needs ", prefix + header_len,
                 " bytes, the file has ", file.size());
  std::string_view text(reinterpret_cast<const char*>(p + prefix), header_len);
  NpyLayout layout = HeaderParser(text, path).parse();
  layout.data_offset = prefix + header_len;

  size_t available = file.size() - layout.data_offset;
  size_t item = item_size(layout.dtype);
  auto rows = static_cast<size_t>(layout.rows), cols = static_cast<size_t>(layout.cols);
  // Compared by division so that an absurd shape cannot overflow the product.
  bool fits = cols == 0 || rows == 0 || (available / item / cols >= rows);
  if (!fits)
    detail::fail(ErrorCode::Format, "'", path, "' has a short payload: shape (", layout.rows, ", ", layout.cols,
                 ") of ", to_string(layout.dtype), " needs more than the ", available, " data bytes present");
  return layout;
}

/// Calls f(T{}) with the C++ type of a dtype.
template <class F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::UInt8: return f(uint8_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
  }
}

template <class T>
void write_npy_matrix(const std::string& path, MatrixView<const T> m, DType dtype) {
  GKNN_EXPECT(m.rows >= 0 && m.cols >= 0, ErrorCode::InvalidArgument, "cannot write '", path,
              "': negative shape ", m.rows, " x ", m.cols);
  std::string header = "{'descr': '" + std::string(descr_of(dtype)) + "', 'fortran_order': False, 'shape': (" +
                       std::to_string(m.rows) + ", " + std::to_string(m.cols) + "), }";
  // numpy aligns the payload to 64 bytes: magic(6) + version(2) + length(2) + header + '\n'.
  size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                    static_cast<unsigned char>(header.size() & 0xff),
                                    static_cast<unsigned char>(header.size() >> 8)};
  detail::io::OutputFile out(path);
  out.write(prefix, sizeof prefix);
  out.write(header.data(), header.size());
  for (int64_t r = 0; r < m.rows; ++r) out.write(m.row(r), static_cast<size_t>(m.cols) * sizeof(T));
  out.close();
}

/// The payload converted to Out (float or int64), each value checked by the converter of io/convert.hpp.
/// Rows [first, first + count) (count -1: to the end), named by their row in the file in errors.
template <class Out>
HostMatrix<Out> read_npy_as(const std::string& path, int64_t first = 0, int64_t count = -1) {
  detail::io::MappedFile file(path);
  const NpyLayout layout = parse_layout(file);
  count = detail::io::checked_count(path, layout.rows, first, count);
  HostMatrix<Out> m(count, layout.cols);
  with_type(layout.dtype, [&](auto tag) {
    using In = decltype(tag);
    const unsigned char* payload =
        file.data() + layout.data_offset + static_cast<size_t>(first * layout.cols) * sizeof(In);
    if constexpr (std::is_same_v<Out, float>)
      detail::io::convert_to_float<In>(payload, m.data.size(), m.data.data(), {path, layout.cols, first});
    else
      detail::io::convert_to_int64<In>(payload, m.data.size(), m.data.data(), {path, layout.cols, first});
  });
  return m;
}

}  // namespace

std::string to_string(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
  }
  return "unknown";
}

NpyArray read_npy(const std::string& path) {
  detail::io::MappedFile file(path);
  NpyLayout layout = parse_layout(file);
  NpyArray a;
  a.dtype = layout.dtype;
  a.rows = layout.rows;
  a.cols = layout.cols;
  const unsigned char* begin = file.data() + layout.data_offset;
  a.bytes.assign(begin, begin + static_cast<size_t>(a.rows * a.cols) * item_size(a.dtype));
  return a;
}

HostMatrix<float> read_npy_float(const std::string& path, int64_t first, int64_t count) {
  return read_npy_as<float>(path, first, count);
}
HostMatrix<int64_t> read_npy_int64(const std::string& path) { return read_npy_as<int64_t>(path); }

MatrixShape npy_shape(const std::string& path) {
  detail::io::MappedFile file(path);
  const NpyLayout layout = parse_layout(file);
  return {layout.rows, layout.cols};
}

void write_npy(const std::string& path, MatrixView<const float> m) { write_npy_matrix(path, m, DType::Float32); }
void write_npy(const std::string& path, MatrixView<const int64_t> m) { write_npy_matrix(path, m, DType::Int64); }
void write_npy(const std::string& path, MatrixView<const int32_t> m) { write_npy_matrix(path, m, DType::Int32); }
void write_npy(const std::string& path, MatrixView<const uint8_t> m) { write_npy_matrix(path, m, DType::UInt8); }

}  // namespace gknn
