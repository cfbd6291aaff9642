// gknn/io.hpp: datasets in the formats kNN users have: TEXMEX fvecs/ivecs/bvecs, NumPy .npy, ann-benchmarks HDF5.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gknn/types.hpp"

namespace gknn {

/// Owning row-major matrix.
template <class T>
struct HostMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<T> data;

  HostMatrix() = default;
  HostMatrix(int64_t r, int64_t c) : rows(r), cols(c), data(static_cast<size_t>(r * c)) {}
  MatrixView<const T> view() const { return {data.data(), rows, cols, cols}; }
  MatrixView<T> view() { return {data.data(), rows, cols, cols}; }
  T* row(int64_t i) { return data.data() + i * cols; }
  const T* row(int64_t i) const { return data.data() + i * cols; }
};

// ---- TEXMEX .fvecs / .ivecs / .bvecs: every row is <int32 dim><dim values>. -------------------------------
/// Reads rows [first, first+count) (count < 0: to the end). Files are memory-mapped. Throws Io for a missing
/// file, Format for a truncated file, a dimension <= 0 or a row whose dimension differs from the first (naming
/// the row; only the rows read are checked), InvalidArgument for a range outside the file. An empty file has
/// no rows.
HostMatrix<float> read_fvecs(const std::string& path, int64_t first = 0, int64_t count = -1);
HostMatrix<int32_t> read_ivecs(const std::string& path, int64_t first = 0, int64_t count = -1);
HostMatrix<uint8_t> read_bvecs(const std::string& path, int64_t first = 0, int64_t count = -1);
void write_fvecs(const std::string& path, MatrixView<const float> m);
void write_ivecs(const std::string& path, MatrixView<const int32_t> m);
void write_bvecs(const std::string& path, MatrixView<const uint8_t> m);

/// Shape of a vecs file without reading it: rows and dimension (validates size and first dimension).
/// element_size: 4 for fvecs/ivecs, 1 for bvecs.
struct VecsShape {
  int64_t rows = 0;
  int64_t dim = 0;
};
VecsShape vecs_shape(const std::string& path, int element_size);

// ---- NumPy .npy (versions 1.0, 2.0, 3.0 read; 1.0 written): 2-D (or 1-D as one row), C order. ----------
// dtypes <f4 <f8 |u1 (or <u1) <i4 <i8, little-endian.
enum class DType { Float32, Float64, UInt8, Int32, Int64 };
std::string to_string(DType t);

struct NpyArray {
  DType dtype = DType::Float32;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<unsigned char> bytes;  ///< rows*cols little-endian values
};
/// Throws Format naming the file for an unsupported dtype, Fortran order, >2 dimensions or a short payload.
NpyArray read_npy(const std::string& path);
/// Converts any supported dtype to float32 / int64. Format, naming the row and column, for a value the target
/// cannot hold: an integer float32 cannot represent exactly (e.g. 2^24+1), a finite float64 beyond the float32
/// range, or a non-integral value read as int64.
/// first/count: rows [first, first+count) only (count < 0: to the end; InvalidArgument outside the file).
HostMatrix<float> read_npy_float(const std::string& path, int64_t first = 0, int64_t count = -1);
HostMatrix<int64_t> read_npy_int64(const std::string& path);
void write_npy(const std::string& path, MatrixView<const float> m);
void write_npy(const std::string& path, MatrixView<const int64_t> m);
void write_npy(const std::string& path, MatrixView<const int32_t> m);
void write_npy(const std::string& path, MatrixView<const uint8_t> m);

// ---- ann-benchmarks HDF5: datasets train, test, neighbors, distances; attribute "distance". ---------------
struct AnnDataset {
  HostMatrix<float> train;
  HostMatrix<float> test;
  HostMatrix<int32_t> neighbors;  ///< may be empty
  HostMatrix<float> distances;    ///< may be empty
  std::string distance = "euclidean";  ///< "euclidean", "angular", "dot", ... as ann-benchmarks names it
};
/// Throws Unsupported when gknn was built without HDF5. train and test are required, neighbors and distances
/// optional; float64 / int64 datasets are converted with the same checks as read_npy_float / read_npy_int64.
/// The writer also sets the attributes type, point_type and dimension as ann-benchmarks does.
AnnDataset read_ann_hdf5(const std::string& path);
void write_ann_hdf5(const std::string& path, const AnnDataset& data);
bool hdf5_supported() noexcept;

// ---- by file name --------------------------------------------------------------------------------------
/// Loads a float matrix from .fvecs, .bvecs (converted), .npy, or "file.hdf5[:dataset]" / "file.h5[:dataset]"
/// (default train; any 1-D or 2-D numeric dataset). Other extensions: InvalidArgument naming the accepted ones.
HostMatrix<float> load_matrix(const std::string& path);
/// Rows and columns of a matrix file (.fvecs, .bvecs, .npy: from the header; HDF5: the dataset is read).
struct MatrixShape {
  int64_t rows = 0;
  int64_t cols = 0;
};
MatrixShape matrix_shape(const std::string& path);
MatrixShape npy_shape(const std::string& path);
/// Rows [first, first+count) of a matrix file (count < 0: to the end), as load_matrix converts them. .fvecs,
/// .bvecs and .npy read only those rows (what an MPI rank reads of a shared file); HDF5 reads the dataset and
/// cuts it. InvalidArgument, naming the file, for a range outside it.
HostMatrix<float> load_matrix_rows(const std::string& path, int64_t first, int64_t count);
/// Loads ground-truth indices from .ivecs, .npy or "file.hdf5[:dataset]" (default neighbors).
HostMatrix<int64_t> load_indices(const std::string& path);
/// Writes indices as .ivecs (int32, Format error if an index exceeds int32) or .npy (int64) by extension.
void save_indices(const std::string& path, MatrixView<const int64_t> m);
/// Writes float32 rows as .fvecs or .npy by extension.
void save_matrix(const std::string& path, MatrixView<const float> m);

// ---- output files ----------------------------------------------------------------------------------------
// Every writer above writes to "<path>.tmp-<pid>-<n>" in the same directory and renames it onto `path` only
// when complete (after fsync), so a failed write or an exception never leaves a truncated file under `path`
// (the temporary file is removed). Existing non-regular targets (/dev/null, a FIFO) are written in place.

/// Unlinks the temporary files of the outputs being written right now. Async-signal-safe: meant for a SIGINT /
/// SIGTERM handler that then calls _exit (the CLI does); after it, those writers fail or rename nothing.
void remove_partial_outputs() noexcept;

}  // namespace gknn
