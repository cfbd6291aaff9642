// io_test.cpp: round trips of every format and dtype, row ranges, and every malformed-file case, each
// checked for its error code and for a message naming the file (and row or problem).
#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gknn/io.hpp"
#include "testing/expect_error.hpp"

#ifdef GKNN_HAS_HDF5
#include <hdf5.h>
#endif

namespace gknn {
namespace {

using testing::expect_error;
using Bytes = std::vector<unsigned char>;

/// A fresh file name in the test temp directory, unique per test.
std::string temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "gknn_io_" + info->test_suite_name() + "_" + info->name() + "_" + name;
}

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <class T>
void append(Bytes& out, T value) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

/// One vecs row with an arbitrary header (which may lie about the number of values that follow).
template <class T>
void append_vecs_row(Bytes& out, int32_t header, const std::vector<T>& values) {
  append(out, header);
  for (T v : values) append(out, v);
}

template <class T>
HostMatrix<T> matrix(int64_t rows, int64_t cols, const std::vector<T>& values) {
  HostMatrix<T> m(rows, cols);
  m.data = values;
  return m;
}

template <class T>
HostMatrix<T> sequence(int64_t rows, int64_t cols, T start, T step) {
  HostMatrix<T> m(rows, cols);
  T v = start;
  for (auto& x : m.data) {
    x = v;
    v = static_cast<T>(v + step);
  }
  return m;
}

/// The read-only view the writers take (HostMatrix::view() on a non-const matrix gives a mutable one).
template <class T>
MatrixView<const T> cview(const HostMatrix<T>& m) {
  return m.view();
}

template <class T>
void expect_same(const HostMatrix<T>& a, const HostMatrix<T>& b) {
  ASSERT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.cols, b.cols);
  ASSERT_EQ(a.data.size(), b.data.size());
  // Bytes, not values: -0.0 and NaN payloads must survive too.
  EXPECT_EQ(0, std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(T)));
}

// ---- vecs ------------------------------------------------------------------------------------------------

TEST(Vecs, FvecsRoundTripKeepsEveryBit) {
  auto m = matrix<float>(3, 4, {1.5f, -0.0f, 1e-40f, std::numeric_limits<float>::max(),  //
                                -2.f, 3.25f, std::numeric_limits<float>::quiet_NaN(), 7.f, 0.f, 1.f, 2.f, 3.f});
  const std::string path = temp_path("a.fvecs");
  write_fvecs(path, cview(m));
  EXPECT_EQ(read_bytes(path).size(), 3u * (4 + 4 * 4));
  expect_same(read_fvecs(path), m);
  VecsShape shape = vecs_shape(path, 4);
  EXPECT_EQ(shape.rows, 3);
  EXPECT_EQ(shape.dim, 4);
}

TEST(Vecs, IvecsAndBvecsRoundTrip) {
  auto ints = matrix<int32_t>(2, 3, {std::numeric_limits<int32_t>::min(), -1, 0, 1, 123456789,
                                     std::numeric_limits<int32_t>::max()});
  write_ivecs(temp_path("a.ivecs"), cview(ints));
  expect_same(read_ivecs(temp_path("a.ivecs")), ints);

  auto bytes = sequence<uint8_t>(4, 64, 0, 1);  // all 256 byte values
  write_bvecs(temp_path("a.bvecs"), cview(bytes));
  EXPECT_EQ(read_bytes(temp_path("a.bvecs")).size(), 4u * (4 + 64));
  expect_same(read_bvecs(temp_path("a.bvecs")), bytes);
  EXPECT_EQ(vecs_shape(temp_path("a.bvecs"), 1).rows, 4);
}

TEST(Vecs, WritesStridedViews) {
  auto wide = sequence<float>(3, 5, 0.f, 1.f);
  MatrixView<const float> left{wide.data.data(), 3, 2, 5};  // first two columns of each row
  write_fvecs(temp_path("s.fvecs"), left);
  expect_same(read_fvecs(temp_path("s.fvecs")), matrix<float>(3, 2, {0, 1, 5, 6, 10, 11}));
}

TEST(Vecs, RowRanges) {
  auto m = sequence<float>(7, 3, 0.f, 1.f);
  const std::string path = temp_path("r.fvecs");
  write_fvecs(path, cview(m));
  auto middle = read_fvecs(path, 2, 3);
  ASSERT_EQ(middle.rows, 3);
  EXPECT_EQ(middle.row(0)[0], 6.f);
  EXPECT_EQ(middle.row(2)[2], 14.f);
  EXPECT_EQ(read_fvecs(path, 5).rows, 2);
  EXPECT_EQ(read_fvecs(path, 5).row(1)[2], 20.f);
  EXPECT_EQ(read_fvecs(path, 7).rows, 0);
  EXPECT_EQ(read_fvecs(path, 7, 0).rows, 0);
  EXPECT_EQ(read_fvecs(path, 0, 7).rows, 7);
}

TEST(Vecs, RowRangeOutOfBoundsIsInvalidArgument) {
  const std::string path = temp_path("r.fvecs");
  write_fvecs(path, cview(sequence<float>(7, 3, 0.f, 1.f)));
  expect_error([&] { read_fvecs(path, -1, 2); }, ErrorCode::InvalidArgument, {path, "[-1"});
  expect_error([&] { read_fvecs(path, 8); }, ErrorCode::InvalidArgument, {path, "7 rows"});
  expect_error([&] { read_fvecs(path, 2, 6); }, ErrorCode::InvalidArgument, {path, "[2, 8)"});
}

TEST(Vecs, EmptyFileHasNoRows) {
  write_bytes(temp_path("e.fvecs"), {});
  auto m = read_fvecs(temp_path("e.fvecs"));
  EXPECT_EQ(m.rows, 0);
  EXPECT_EQ(vecs_shape(temp_path("e.fvecs"), 4).rows, 0);
}

TEST(Vecs, MissingOrUnreadableFileIsIo) {
  const std::string missing = temp_path("missing.fvecs");
  std::remove(missing.c_str());
  expect_error([&] { read_fvecs(missing); }, ErrorCode::Io, {missing});
  expect_error([&] { vecs_shape(missing, 4); }, ErrorCode::Io, {missing});
  expect_error([&] { read_fvecs(::testing::TempDir()); }, ErrorCode::Io, {::testing::TempDir()});
}

TEST(Vecs, UnwritablePathIsIo) {
  const std::string path = temp_path("no_such_dir") + "/x.fvecs";
  expect_error([&] { write_fvecs(path, cview(sequence<float>(1, 2, 0.f, 1.f))); }, ErrorCode::Io, {path});
  expect_error([&] { write_bvecs(path, cview(sequence<uint8_t>(1, 2, 0, 1))); }, ErrorCode::Io, {path});
}

TEST(Vecs, ZeroColumnRowsCannotBeWritten) {
  HostMatrix<float> m(2, 0);
  expect_error([&] { write_fvecs(temp_path("z.fvecs"), cview(m)); }, ErrorCode::InvalidArgument, {"columns"});
}

TEST(Vecs, TruncatedLastRowIsFormatNamingTheRow) {
  Bytes b;
  for (int r = 0; r < 3; ++r) append_vecs_row<float>(b, 4, {1, 2, 3, 4});
  b.resize(b.size() - 5);
  const std::string path = temp_path("t.fvecs");
  write_bytes(path, b);
  expect_error([&] { read_fvecs(path); }, ErrorCode::Format, {path, "truncated", "row 2"});
  expect_error([&] { read_fvecs(path, 0, 1); }, ErrorCode::Format, {path, "row 2"});
  expect_error([&] { vecs_shape(path, 4); }, ErrorCode::Format, {path, "row 2"});
}

TEST(Vecs, FileShorterThanAHeaderIsFormat) {
  const std::string path = temp_path("h.ivecs");
  write_bytes(path, {4, 0});
  expect_error([&] { read_ivecs(path); }, ErrorCode::Format, {path, "row 0"});
}

TEST(Vecs, DimensionChangeIsFormatNamingRowAndBothDimensions) {
  // Row 2 claims 5 values but holds 4, so the file size stays a whole number of 4-d rows.
  Bytes b;
  append_vecs_row<int32_t>(b, 4, {1, 2, 3, 4});
  append_vecs_row<int32_t>(b, 4, {1, 2, 3, 4});
  append_vecs_row<int32_t>(b, 5, {1, 2, 3, 4});
  append_vecs_row<int32_t>(b, 4, {1, 2, 3, 4});
  const std::string path = temp_path("d.ivecs");
  write_bytes(path, b);
  expect_error([&] { read_ivecs(path); }, ErrorCode::Format, {path, "row 2", "dimension 5", "dimension 4"});
  // Only the rows read are checked: a range before the bad row is fine.
  EXPECT_EQ(read_ivecs(path, 0, 2).rows, 2);
  expect_error([&] { read_ivecs(path, 1, 2); }, ErrorCode::Format, {"row 2"});
}

TEST(Vecs, DimensionChangeThatBreaksTheSizeIsReportedAsSuch) {
  Bytes b;
  append_vecs_row<float>(b, 3, {1, 2, 3});
  append_vecs_row<float>(b, 3, {1, 2, 3});
  append_vecs_row<float>(b, 2, {1, 2});
  append_vecs_row<float>(b, 3, {1, 2, 3});
  append_vecs_row<float>(b, 3, {1, 2, 3});
  const std::string path = temp_path("d.fvecs");
  write_bytes(path, b);
  expect_error([&] { read_fvecs(path); }, ErrorCode::Format, {path, "row 2", "dimension 2", "dimension 3"});
}

TEST(Vecs, NonPositiveDimensionIsFormat) {
  for (int32_t dim : {0, -3}) {
    Bytes b;
    append_vecs_row<float>(b, dim, {1, 2, 3});
    const std::string path = temp_path("n.fvecs");
    write_bytes(path, b);
    expect_error([&] { read_fvecs(path); }, ErrorCode::Format, {path, "row 0", "dimension " + std::to_string(dim)});
  }
}

TEST(Vecs, ElementSizeOfShapeIsChecked) {
  expect_error([&] { vecs_shape(temp_path("x.fvecs"), 2); }, ErrorCode::InvalidArgument, {"element size"});
}

// ---- npy -------------------------------------------------------------------------------------------------

/// A .npy file with the given version and header dict, padded like numpy (to 64 bytes), then the payload.
Bytes npy_file(int major, const std::string& dict, const Bytes& payload) {
  const size_t length_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  size_t unpadded = 8 + length_bytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  for (size_t i = 0; i < length_bytes; ++i) b.push_back(static_cast<unsigned char>(header.size() >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

template <class T>
Bytes payload(const std::vector<T>& values) {
  Bytes b;
  for (T v : values) append(b, v);
  return b;
}

TEST(Npy, WrittenFilesHaveAnAlignedVersion1Header) {
  const std::string path = temp_path("a.npy");
  write_npy(path, cview(sequence<float>(2, 3, 0.f, 1.f)));
  Bytes b = read_bytes(path);
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(std::string(b.begin() + 1, b.begin() + 6), "NUMPY");
  EXPECT_EQ(b[6], 1);
  EXPECT_EQ(b[7], 0);
  size_t data_offset = 10 + (b[8] | (b[9] << 8));
  EXPECT_EQ(data_offset % 64, 0u);
  EXPECT_EQ(b[data_offset - 1], '\n');
  EXPECT_EQ(b.size(), data_offset + 6 * sizeof(float));
  std::string header(b.begin() + 10, b.begin() + static_cast<std::ptrdiff_t>(data_offset));
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (2, 3)"), std::string::npos) << header;
}

TEST(Npy, RoundTripEveryWrittenDtype) {
  auto f = sequence<float>(3, 4, -1.5f, 0.25f);
  write_npy(temp_path("f.npy"), cview(f));
  NpyArray a = read_npy(temp_path("f.npy"));
  EXPECT_EQ(a.dtype, DType::Float32);
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.cols, 4);
  EXPECT_EQ(0, std::memcmp(a.bytes.data(), f.data.data(), a.bytes.size()));
  expect_same(read_npy_float(temp_path("f.npy")), f);

  auto i64 = matrix<int64_t>(2, 2, {-1, std::numeric_limits<int64_t>::max(), 0, 1LL << 40});
  write_npy(temp_path("l.npy"), cview(i64));
  EXPECT_EQ(read_npy(temp_path("l.npy")).dtype, DType::Int64);
  expect_same(read_npy_int64(temp_path("l.npy")), i64);

  auto i32 = matrix<int32_t>(1, 3, {-7, 0, 1 << 24});
  write_npy(temp_path("i.npy"), cview(i32));
  EXPECT_EQ(read_npy(temp_path("i.npy")).dtype, DType::Int32);
  expect_same(read_npy_float(temp_path("i.npy")), matrix<float>(1, 3, {-7.f, 0.f, 16777216.f}));
  expect_same(read_npy_int64(temp_path("i.npy")), matrix<int64_t>(1, 3, {-7, 0, 1 << 24}));

  auto u8 = sequence<uint8_t>(2, 128, 0, 1);
  write_npy(temp_path("b.npy"), cview(u8));
  EXPECT_EQ(read_npy(temp_path("b.npy")).dtype, DType::UInt8);
  auto as_float = read_npy_float(temp_path("b.npy"));
  EXPECT_EQ(as_float.row(1)[127], 255.f);
  EXPECT_EQ(read_npy_int64(temp_path("b.npy")).row(0)[5], 5);
}

TEST(Npy, EmptyMatrixRoundTrips) {
  HostMatrix<float> m(0, 7);
  write_npy(temp_path("e.npy"), cview(m));
  auto back = read_npy_float(temp_path("e.npy"));
  EXPECT_EQ(back.rows, 0);
  EXPECT_EQ(back.cols, 7);
}

TEST(Npy, ReadsVersions2And3AndFloat64) {
  const std::vector<double> values = {0.1, -2.5, 1e-3, 3.0, 1e30, -0.0};
  for (int major : {2, 3}) {
    const std::string path = temp_path("v" + std::to_string(major) + ".npy");
    write_bytes(path, npy_file(major, dict("<f8", "(3, 2)"), payload(values)));
    auto m = read_npy_float(path);
    ASSERT_EQ(m.rows, 3);
    ASSERT_EQ(m.cols, 2);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(m.data[i], static_cast<float>(values[i])) << i;
    EXPECT_EQ(read_npy(path).dtype, DType::Float64);
  }
}

TEST(Npy, OneDimensionalArrayIsOneRow) {
  const std::string path = temp_path("v.npy");
  write_bytes(path, npy_file(1, dict("<i8", "(4,)"), payload<int64_t>({4, 3, 2, 1})));
  auto m = read_npy_int64(path);
  EXPECT_EQ(m.rows, 1);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.data, (std::vector<int64_t>{4, 3, 2, 1}));
}

TEST(Npy, BothSpellingsOfUint8AndDoubleQuotes) {
  for (const char* descr : {"|u1", "<u1"}) {
    const std::string path = temp_path("u.npy");
    write_bytes(path, npy_file(1, dict(descr, "(1, 3)"), {0, 128, 255}));
    EXPECT_EQ(read_npy_float(path).data, (std::vector<float>{0.f, 128.f, 255.f})) << descr;
  }
  const std::string path = temp_path("q.npy");
  write_bytes(path, npy_file(1, R"({"descr": "<i4", "fortran_order": False, "shape": (2, 1)})", payload<int32_t>({5, 6})));
  EXPECT_EQ(read_npy_int64(path).data, (std::vector<int64_t>{5, 6}));
}

TEST(Npy, IntegersMustConvertExactly) {
  const std::string path = temp_path("big.npy");
  // 2^25 is a float; 2^24 + 1 is not (row 1, column 0).
  write_bytes(path, npy_file(1, dict("<i8", "(2, 2)"), payload<int64_t>({1 << 25, 3, (1 << 24) + 1, 4})));
  expect_error([&] { read_npy_float(path); }, ErrorCode::Format, {path, "16777217", "row 1, column 0"});
  EXPECT_EQ(read_npy_int64(path).data[2], (1 << 24) + 1);

  write_bytes(path, npy_file(1, dict("<f8", "(1, 3)"), payload<double>({1.0, 2.5, 3.0})));
  expect_error([&] { read_npy_int64(path); }, ErrorCode::Format, {path, "2.5", "row 0, column 1"});

  write_bytes(path, npy_file(1, dict("<f8", "(1, 2)"), payload<double>({1.0, 1e300})));
  expect_error([&] { read_npy_float(path); }, ErrorCode::Format, {path, "float32 range", "column 1"});

  write_bytes(path, npy_file(1, dict("<f4", "(1, 2)"), payload<float>({7.f, -3.f})));
  EXPECT_EQ(read_npy_int64(path).data, (std::vector<int64_t>{7, -3}));
}

struct BadNpy {
  const char* name;
  Bytes file;
  const char* problem;
};

TEST(Npy, MalformedFilesAreFormatNamingFileAndProblem) {
  const Bytes six_floats = payload<float>({1, 2, 3, 4, 5, 6});
  std::vector<BadNpy> cases = {
      {"fortran", npy_file(1, dict("<f4", "(2, 3)", "True"), six_floats), "Fortran"},
      {"big_endian", npy_file(1, dict(">f4", "(2, 3)"), six_floats), "big-endian"},
      {"object", npy_file(1, dict("|O", "(2, 3)"), six_floats), "object"},
      {"half", npy_file(1, dict("<f2", "(2, 3)"), six_floats), "unsupported dtype '<f2'"},
      {"three_dims", npy_file(1, dict("<f4", "(1, 2, 3)"), six_floats), "3-dimensional"},
      {"scalar", npy_file(1, dict("<f4", "()"), six_floats), "0-dimensional"},
      {"short", npy_file(1, dict("<f4", "(2, 4)"), six_floats), "short payload"},
      {"structured", npy_file(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", six_floats),
       "structured"},
      {"no_shape", npy_file(1, "{'descr': '<f4', 'fortran_order': False, }", six_floats), "lacks"},
      {"bad_dict", npy_file(1, "{'descr' '<f4'}", six_floats), "malformed"},
      {"version", npy_file(4, dict("<f4", "(2, 3)"), six_floats), "version 4"},
      {"magic", Bytes{'N', 'U', 'M', 'P', 'Y', 'x', 1, 0, 0, 0, 0}, "magic"},
      {"cut_header", npy_file(1, dict("<f4", "(2, 3)"), {}), "truncated"},
  };
  cases.back().file.resize(40);  // ends inside the 64-byte header
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = temp_path(std::string(c.name) + ".npy");
    write_bytes(path, c.file);
    expect_error([&] { read_npy(path); }, ErrorCode::Format, {path, c.problem});
    expect_error([&] { read_npy_float(path); }, ErrorCode::Format, {path, c.problem});
  }
}

TEST(Npy, MissingAndUnwritableFilesAreIo) {
  const std::string missing = temp_path("missing.npy");
  expect_error([&] { read_npy(missing); }, ErrorCode::Io, {missing});
  const std::string unwritable = temp_path("no_dir") + "/x.npy";
  expect_error([&] { write_npy(unwritable, cview(sequence<float>(1, 1, 0.f, 1.f))); }, ErrorCode::Io, {unwritable});
}

// ---- by file name ----------------------------------------------------------------------------------------

TEST(Load, MatrixByExtension) {
  auto f = sequence<float>(4, 3, 0.f, 0.5f);
  save_matrix(temp_path("m.fvecs"), cview(f));
  save_matrix(temp_path("m.npy"), cview(f));
  expect_same(load_matrix(temp_path("m.fvecs")), f);
  expect_same(load_matrix(temp_path("m.npy")), f);

  auto b = sequence<uint8_t>(2, 3, 250, 1);
  write_bvecs(temp_path("m.bvecs"), cview(b));
  expect_same(load_matrix(temp_path("m.bvecs")), matrix<float>(2, 3, {250, 251, 252, 253, 254, 255}));

  // A colon only selects a dataset after an HDF5 name; elsewhere it is part of the path.
  save_matrix(temp_path("a:b.fvecs"), cview(f));
  expect_same(load_matrix(temp_path("a:b.fvecs")), f);
}

TEST(Load, IndicesByExtension) {
  auto ids = matrix<int64_t>(2, 3, {0, 5, -1, 7, 8, 2147483647});
  save_indices(temp_path("i.ivecs"), cview(ids));
  save_indices(temp_path("i.npy"), cview(ids));
  expect_same(load_indices(temp_path("i.ivecs")), ids);
  expect_same(load_indices(temp_path("i.npy")), ids);
  EXPECT_EQ(read_npy(temp_path("i.npy")).dtype, DType::Int64);
  EXPECT_EQ(read_ivecs(temp_path("i.ivecs")).cols, 3);
}

TEST(Load, IvecsCannotHoldLargeIndices) {
  auto ids = matrix<int64_t>(2, 2, {0, 1, 2, 1LL << 31});
  expect_error([&] { save_indices(temp_path("i.ivecs"), cview(ids)); }, ErrorCode::Format,
               {temp_path("i.ivecs"), "2147483648", "row 1, column 1"});
}

TEST(Load, UnknownExtensionsNameTheAcceptedOnes) {
  HostMatrix<float> f(1, 1);
  HostMatrix<int64_t> i(1, 1);
  expect_error([&] { load_matrix("data.txt"); }, ErrorCode::InvalidArgument, {"data.txt", ".fvecs", ".npy", ".hdf5"});
  expect_error([&] { load_indices("gt.fvecs"); }, ErrorCode::InvalidArgument, {"gt.fvecs", ".ivecs"});
  expect_error([&] { save_matrix("out.csv", cview(f)); }, ErrorCode::InvalidArgument, {"out.csv", ".fvecs", ".npy"});
  expect_error([&] { save_indices("out", cview(i)); }, ErrorCode::InvalidArgument, {"out", ".ivecs", ".npy"});
}

// ---- HDF5 ------------------------------------------------------------------------------------------------

AnnDataset small_ann() {
  AnnDataset d;
  d.train = sequence<float>(5, 3, 0.f, 0.5f);
  d.test = sequence<float>(2, 3, 10.f, -1.f);
  d.neighbors = matrix<int32_t>(2, 2, {4, 3, 0, 1});
  d.distances = matrix<float>(2, 2, {0.5f, 0.75f, 1.f, 2.f});
  d.distance = "angular";
  return d;
}

#ifdef GKNN_HAS_HDF5

TEST(Hdf5, AnnRoundTrip) {
  ASSERT_TRUE(hdf5_supported());
  const std::string path = temp_path("a.hdf5");
  AnnDataset d = small_ann();
  write_ann_hdf5(path, d);
  AnnDataset back = read_ann_hdf5(path);
  expect_same(back.train, d.train);
  expect_same(back.test, d.test);
  expect_same(back.neighbors, d.neighbors);
  expect_same(back.distances, d.distances);
  EXPECT_EQ(back.distance, "angular");
}

TEST(Hdf5, NeighborsAndDistancesAreOptional) {
  const std::string path = temp_path("a.hdf5");
  AnnDataset d = small_ann();
  d.neighbors = {};
  d.distances = {};
  write_ann_hdf5(path, d);
  AnnDataset back = read_ann_hdf5(path);
  EXPECT_EQ(back.neighbors.rows, 0);
  EXPECT_EQ(back.distances.rows, 0);
  expect_same(back.train, d.train);
}

TEST(Hdf5, LoadSelectsTheDataset) {
  const std::string path = temp_path("a.hdf5");
  AnnDataset d = small_ann();
  write_ann_hdf5(path, d);
  expect_same(load_matrix(path), d.train);
  expect_same(load_matrix(path + ":train"), d.train);
  expect_same(load_matrix(path + ":test"), d.test);
  expect_same(load_indices(path), matrix<int64_t>(2, 2, {4, 3, 0, 1}));
  expect_same(load_indices(path + ":neighbors"), matrix<int64_t>(2, 2, {4, 3, 0, 1}));
  expect_error([&] { load_matrix(path + ":nosuch"); }, ErrorCode::Format, {path, "'nosuch'"});
  expect_error([&] { load_matrix(path + ":"); }, ErrorCode::InvalidArgument, {path});
}

TEST(Hdf5, MissingFileIsIoAndOtherFilesAreFormat) {
  const std::string missing = temp_path("missing.hdf5");
  expect_error([&] { read_ann_hdf5(missing); }, ErrorCode::Io, {missing});
  expect_error([&] { load_matrix(missing + ":test"); }, ErrorCode::Io, {missing});
  const std::string text = temp_path("text.hdf5");
  write_bytes(text, {'h', 'e', 'l', 'l', 'o'});
  expect_error([&] { read_ann_hdf5(text); }, ErrorCode::Format, {text, "not an HDF5"});
  const std::string unwritable = temp_path("no_dir") + "/x.hdf5";
  expect_error([&] { write_ann_hdf5(unwritable, small_ann()); }, ErrorCode::Io, {unwritable});
}

/// Writes a dataset with the HDF5 C API directly, to produce files gknn itself never writes.
template <class T>
void raw_dataset(hid_t file, const char* name, hid_t type, const std::vector<hsize_t>& dims, const std::vector<T>& v) {
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Dclose(ds);
  H5Sclose(space);
}

void fixed_string_attribute(hid_t file, const char* name, const std::string& value) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size() + 3);  // null-padded, as numpy 'S' strings are stored
  std::string padded = value + std::string(3, '\0');
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, padded.data());
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

TEST(Hdf5, ConvertsFloat64AndInt64DatasetsAndFixedStrings) {
  const std::string path = temp_path("wide.hdf5");
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  raw_dataset<double>(file, "train", H5T_NATIVE_DOUBLE, {2, 2}, {0.1, 0.2, 0.3, 0.4});
  raw_dataset<double>(file, "test", H5T_NATIVE_DOUBLE, {3}, {1.0, 2.0, 3.0});
  raw_dataset<int64_t>(file, "neighbors", H5T_NATIVE_INT64, {1, 2}, {1, 0});
  raw_dataset<double>(file, "distances", H5T_NATIVE_DOUBLE, {1, 2}, {0.5, 1.5});
  raw_dataset<int64_t>(file, "huge", H5T_NATIVE_INT64, {1, 2}, {1, (1LL << 24) + 1});
  raw_dataset<double>(file, "fraction", H5T_NATIVE_DOUBLE, {1, 1}, {0.5});
  raw_dataset<int32_t>(file, "cube", H5T_NATIVE_INT32, {1, 1, 2}, {1, 2});
  fixed_string_attribute(file, "distance", "euclidean");
  H5Fclose(file);

  AnnDataset d = read_ann_hdf5(path);
  expect_same(d.train, matrix<float>(2, 2, {0.1f, 0.2f, 0.3f, 0.4f}));
  expect_same(d.test, matrix<float>(1, 3, {1.f, 2.f, 3.f}));
  expect_same(d.neighbors, matrix<int32_t>(1, 2, {1, 0}));
  expect_same(d.distances, matrix<float>(1, 2, {0.5f, 1.5f}));
  EXPECT_EQ(d.distance, "euclidean");
  expect_same(load_indices(path), matrix<int64_t>(1, 2, {1, 0}));
  expect_error([&] { load_matrix(path + ":huge"); }, ErrorCode::Format, {path, "16777217", "row 0, column 1"});
  expect_error([&] { load_indices(path + ":fraction"); }, ErrorCode::Format, {path, "0.5", "row 0, column 0"});
  expect_error([&] { load_matrix(path + ":cube"); }, ErrorCode::Format, {path, "'cube'", "3 dimensions"});
}

/// An ann-benchmarks file whose "distance" attribute is an array of `count` strings ("l2" each), fixed-length
/// (4 bytes) or variable-length.
void string_array_attribute_file(const std::string& path, hsize_t count, bool variable) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  raw_dataset<float>(file, "train", H5T_NATIVE_FLOAT, {2, 2}, {1.f, 2.f, 3.f, 4.f});
  raw_dataset<float>(file, "test", H5T_NATIVE_FLOAT, {1, 2}, {5.f, 6.f});
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, variable ? H5T_VARIABLE : 4);
  hid_t space = H5Screate_simple(1, &count, nullptr);
  hid_t attr = H5Acreate2(file, "distance", type, space, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<const char*> pointers(count, "l2");
  std::vector<char> fixed(count * 4, '\0');
  for (hsize_t i = 0; i < count; ++i) std::memcpy(&fixed[i * 4], "l2", 2);
  ASSERT_GE(H5Awrite(attr, type, variable ? static_cast<const void*>(pointers.data()) : fixed.data()), 0);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);
}

TEST(Hdf5, DistanceAttributeOfSeveralStringsIsFormatBeforeReading) {
  // H5Aread writes every element: an array attribute read into a buffer for one string overflowed it.
  for (const bool variable : {false, true}) {
    const std::string path = temp_path(variable ? "vlen.hdf5" : "fixed.hdf5");
    string_array_attribute_file(path, 64, variable);
    expect_error([&] { read_ann_hdf5(path); }, ErrorCode::Format, {path, "'distance'", "64 values"});
    string_array_attribute_file(path, 1, variable);  // one string in a 1-element array is read as a scalar
    EXPECT_EQ(read_ann_hdf5(path).distance, "l2");
  }
}

TEST(Hdf5, ShapeBeyondTheStoredValuesIsFormatBeforeAllocating) {
  // A chunked dataset of 2^20 x 2^20 float64 with nothing written stores no chunk: reading it would allocate
  // 8 TiB for fill values. The reader refuses it from the sizes, naming the shape and the stored bytes.
  const std::string path = temp_path("claims.hdf5");
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hsize_t dims[2] = {hsize_t{1} << 20, hsize_t{1} << 20}, chunk[2] = {64, 64};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(plist, 2, chunk);
  hid_t ds = H5Dcreate2(file, "train", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  H5Dclose(ds);
  H5Pclose(plist);
  H5Sclose(space);
  H5Fclose(file);
  expect_error([&] { load_matrix(path + ":train"); }, ErrorCode::Format,
               {path, "'train'", "1048576 x 1048576", "stores 0 bytes"});
}

#else

TEST(Hdf5, UnsupportedWithoutHdf5) {
  EXPECT_FALSE(hdf5_supported());
  const std::string path = temp_path("a.hdf5");
  expect_error([&] { write_ann_hdf5(path, small_ann()); }, ErrorCode::Unsupported, {path, "HDF5"});
  expect_error([&] { read_ann_hdf5(path); }, ErrorCode::Unsupported, {path, "HDF5"});
  expect_error([&] { load_matrix(path + ":test"); }, ErrorCode::Unsupported, {path});
}

#endif

}  // namespace
}  // namespace gknn
