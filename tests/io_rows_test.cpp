// io_rows_test.cpp: reading a row range of a matrix file (what each MPI rank reads of a shared base):
// load_matrix_rows / matrix_shape by file name, read_npy_float ranges of every dtype, errors naming file rows.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gknn/io.hpp"
#include "testing/data.hpp"
#include "testing/expect_error.hpp"

namespace gknn::testing {
namespace {

std::string temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "gknn_io_rows_" + info->name() + "_" + name;
}

std::vector<float> slice(const HostMatrix<float>& m, int64_t first, int64_t count) {
  return {m.data.begin() + first * m.cols, m.data.begin() + (first + count) * m.cols};
}

TEST(IoRows, EveryFormatReadsTheSameRanges) {
  const HostMatrix<float> m = integer_matrix(23, 5, 0, 200, 1);
  HostMatrix<uint8_t> bytes(m.rows, m.cols);
  HostMatrix<int64_t> wide(m.rows, m.cols);
  for (size_t i = 0; i < m.data.size(); ++i) bytes.data[i] = uint8_t(m.data[i]), wide.data[i] = int64_t(m.data[i]);
  std::vector<std::string> paths{temp_path("m.fvecs"), temp_path("m.bvecs"), temp_path("m.npy"),
                                 temp_path("u8.npy"), temp_path("i64.npy")};
  write_fvecs(paths[0], m.view());
  write_bvecs(paths[1], std::as_const(bytes).view());
  write_npy(paths[2], m.view());
  write_npy(paths[3], std::as_const(bytes).view());
  write_npy(paths[4], std::as_const(wide).view());
  if (hdf5_supported()) {
    paths.push_back(temp_path("m.hdf5"));
    AnnDataset set;
    set.train = m;
    set.test = m;
    write_ann_hdf5(paths.back(), set);
  }
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const MatrixShape shape = matrix_shape(path);
    EXPECT_EQ(shape.rows, 23);
    EXPECT_EQ(shape.cols, 5);
    for (auto [first, count] : {std::pair<int64_t, int64_t>{0, 23}, {0, 0}, {7, 9}, {22, 1}, {23, 0}}) {
      const HostMatrix<float> got = load_matrix_rows(path, first, count);
      EXPECT_EQ(got.rows, count);
      EXPECT_EQ(got.cols, 5);
      EXPECT_EQ(got.data, slice(m, first, count)) << "rows " << first << " + " << count;
    }
    EXPECT_EQ(load_matrix_rows(path, 20, -1).rows, 3);
    expect_error([&] { load_matrix_rows(path, 20, 4); }, ErrorCode::InvalidArgument, {"[20, 24)", "23 rows"});
    expect_error([&] { load_matrix_rows(path, -1, 2); }, ErrorCode::InvalidArgument, {"23 rows"});
  }
  for (const std::string& path : paths) std::remove(path.c_str());
}

TEST(IoRows, NpyConversionErrorsNameTheFileRow) {
  HostMatrix<int64_t> wide(10, 3);
  wide.row(6)[2] = (int64_t(1) << 24) + 1;  // no float32 holds it
  const std::string path = temp_path("bad.npy");
  write_npy(path, std::as_const(wide).view());
  EXPECT_EQ(read_npy_float(path, 0, 6).rows, 6);  // the bad row is not read
  expect_error([&] { read_npy_float(path, 4, 4); }, ErrorCode::Format, {"bad.npy", "row 6", "column 2"});
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gknn::testing
