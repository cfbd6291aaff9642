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
/// file, Format for a truncated file or a row whose dimension differs from the first (naming the row).
HostMatrix<float> read_fvecs(const std::string& path, int64_t first = 0, int64_t count = -1);
HostMatrix<int32_t> read_ivecs(const std::string& path, int64_t first = 0, int64_t count = -1);
HostMatrix<uint8_t> read_bvecs(const std::string& path, int64_t first = 0, int64_t count = -1);
void write_fvecs(const std::string& path, MatrixView<const float> m);
void write_ivecs(const std::string& path, MatrixView<const int32_t> m);
void write_bvecs(const std::string& path, MatrixView<const uint8_t> m);

/// Shape of a vecs file without reading it: rows and dimension (validates size and first dimension).
struct VecsShape {
  int64_t rows = 0;
  int64_t dim = 0;
};
VecsShape vecs_shape(const std::string& path, int element_size);

// ---- NumPy .npy (versions 1.0, 2.0 read; 1.0 written): 2-D (or 1-D as one row), C order. ---------------
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
/// Converts any supported dtype to float32 / int64 (Format if the conversion would lose integers > 2^24).
HostMatrix<float> read_npy_float(const std::string& path);
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
/// Throws Unsupported when gknn was built without HDF5.
AnnDataset read_ann_hdf5(const std::string& path);
void write_ann_hdf5(const std::string& path, const AnnDataset& data);
bool hdf5_supported() noexcept;

// ---- by file name --------------------------------------------------------------------------------------
/// Loads a float matrix from .fvecs, .bvecs (converted), .npy, or "file.hdf5[:train|:test]" (default train).
HostMatrix<float> load_matrix(const std::string& path);
/// Loads ground-truth indices from .ivecs, .npy or "file.hdf5[:neighbors]".
HostMatrix<int64_t> load_indices(const std::string& path);
/// Writes indices as .ivecs (int32, Format error if an index exceeds int32) or .npy (int64) by extension.
void save_indices(const std::string& path, MatrixView<const int64_t> m);
/// Writes float32 rows as .fvecs or .npy by extension.
void save_matrix(const std::string& path, MatrixView<const float> m);

}  // namespace gknn
