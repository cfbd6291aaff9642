// hdf5.cpp: ann-benchmarks HDF5 files: datasets train, test (float), neighbors (int), distances (float) and
// the root attribute "distance". Real files store some datasets as float64 or int64: they are converted
// with the same exactness checks as .npy files.
#include "io/hdf5.hpp"

#include "gknn/error.hpp"
#include "gknn/io.hpp"

#ifdef GKNN_HAS_HDF5
#include <hdf5.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

#include "io/convert.hpp"
#include "io/staged_path.hpp"

namespace gknn {
namespace {

/// Owns one HDF5 identifier and closes it with the matching H5*close function.
class Hid {
 public:
  Hid(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Hid() {
    if (id_ >= 0) closer_(id_);
  }
  Hid(Hid&& other) noexcept : id_(std::exchange(other.id_, -1)), closer_(other.closer_) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  Hid& operator=(Hid&&) = delete;
  hid_t get() const noexcept { return id_; }
  /// Gives up ownership (to close explicitly and check the result).
  hid_t release() noexcept { return std::exchange(id_, -1); }
  bool valid() const noexcept { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*closer_)(hid_t);
};

/// HDF5 prints its error stack to stderr by default; gknn reports through exceptions instead.
class QuietHdf5Errors {
 public:
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// Io for a file that cannot be opened at all, Format for a readable file that is not HDF5.
Hid open_for_reading(const std::string& path) {
  std::FILE* probe = std::fopen(path.c_str(), "rb");
  if (probe == nullptr) detail::fail(ErrorCode::Io, "cannot open '", path, "': ", std::strerror(errno));
  std::fclose(probe);
  if (H5Fis_hdf5(path.c_str()) <= 0) detail::fail(ErrorCode::Format, "'", path, "' is not an HDF5 file");
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) detail::fail(ErrorCode::Io, "cannot open HDF5 file '", path, "'");
  return file;
}

struct Dataset {
  int64_t rows = 0;
  int64_t cols = 0;
  H5T_class_t type_class = H5T_NO_CLASS;
  size_t type_size = 0;
};

Hid open_dataset(hid_t file, const std::string& path, const std::string& name) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0)
    detail::fail(ErrorCode::Format, "'", path, "' has no dataset '", name, "'");
  Hid ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) detail::fail(ErrorCode::Format, "'", path, "': '", name, "' is not a dataset");
  return ds;
}

/// Deflate, the strongest filter of ann-benchmarks files, compresses at most about 1032:1.
constexpr double kMaxCompression = 1032.0;

/// The shape comes from the file: before anything is allocated for it, the values it claims must be storable in
/// what the dataset actually stores (a corrupt or hostile header must not make the reader allocate terabytes).
/// Contiguous and compact datasets store every value; chunked (possibly compressed) ones at least
/// 1/kMaxCompression of them.
void check_storage(hid_t ds, const hsize_t dims[2], size_t type_size, const std::string& path,
                   const std::string& name) {
  constexpr hsize_t kLimit = hsize_t{1} << 40;  // values per dimension; also keeps rows * cols * 8 in range
  if (dims[0] > kLimit || dims[1] > kLimit || (dims[1] > 0 && dims[0] > (hsize_t{1} << 56) / dims[1]))
    detail::fail(ErrorCode::Format, "'", path, "': dataset '", name, "' has an impossible shape ", dims[0], " x ",
                 dims[1]);
  if (type_size == 0)  // a corrupt type: with it the size check below would pass any shape
    detail::fail(ErrorCode::Format, "'", path, "': dataset '", name, "' has elements of size 0");
  const double needed = static_cast<double>(dims[0]) * static_cast<double>(dims[1]) * static_cast<double>(type_size);
  if (needed == 0) return;
  const auto stored = static_cast<double>(H5Dget_storage_size(ds));
  // The storage size itself comes from the file's metadata (the chunk index): it cannot exceed the file.
  std::error_code size_error;
  const auto file_bytes = static_cast<double>(std::filesystem::file_size(path, size_error));
  if (!size_error && stored > file_bytes)
    detail::fail(ErrorCode::Format, "'", path, "': dataset '", name, "' claims ", stored, " stored bytes in a file of ",
                 file_bytes, " bytes");
  Hid plist(H5Dget_create_plist(ds), H5Pclose);
  const bool chunked = plist.valid() && H5Pget_layout(plist.get()) == H5D_CHUNKED;
  if (stored < (chunked ? needed / kMaxCompression : needed))
    detail::fail(ErrorCode::Format, "'", path, "': dataset '", name, "' claims ", dims[0], " x ", dims[1],
                 " values (", needed, " bytes) but stores ", stored, " bytes", chunked ? " (compressed)" : "");
}

Dataset describe(hid_t ds, const std::string& path, const std::string& name) {
  Hid space(H5Dget_space(ds), H5Sclose);
  Hid type(H5Dget_type(ds), H5Tclose);
  int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 1 || rank > 2)
    detail::fail(ErrorCode::Format, "'", path, "': dataset '", name, "' has ", rank,
                 " dimensions (need 1 or 2)");
  hsize_t dims[2] = {1, 1};
  H5Sget_simple_extent_dims(space.get(), rank == 2 ? dims : dims + 1, nullptr);
  Dataset d;
  d.rows = static_cast<int64_t>(dims[0]);
  d.cols = static_cast<int64_t>(dims[1]);
  d.type_class = H5Tget_class(type.get());
  d.type_size = H5Tget_size(type.get());
  if (d.type_class != H5T_FLOAT && d.type_class != H5T_INTEGER)
    detail::fail(ErrorCode::Format, "'", path, "': dataset '", name, "' is not numeric");
  check_storage(ds, dims, d.type_size, path, name);
  return d;
}

/// Reads the whole dataset, converted by HDF5 to the memory type (exact for the widening reads used here).
template <class T>
std::vector<T> read_all(hid_t ds, hid_t mem_type, const Dataset& d, const std::string& path, const std::string& name) {
  std::vector<T> out(static_cast<size_t>(d.rows * d.cols));
  if (!out.empty() && H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    detail::fail(ErrorCode::Format, "'", path, "': cannot read dataset '", name, "'");
  return out;
}

template <class Dst, class Src, class Convert>
HostMatrix<Dst> convert_all(const std::vector<Src>& src, const Dataset& d, const std::string& path, Convert convert) {
  HostMatrix<Dst> m(d.rows, d.cols);
  convert(reinterpret_cast<const unsigned char*>(src.data()), src.size(), m.data.data(), detail::io::Place{path, d.cols});
  return m;
}

HostMatrix<float> read_float(hid_t file, const std::string& path, const std::string& name) {
  Hid ds = open_dataset(file, path, name);
  Dataset d = describe(ds.get(), path, name);
  if (d.type_class == H5T_FLOAT && d.type_size <= sizeof(float)) {
    HostMatrix<float> m(d.rows, d.cols);
    m.data = read_all<float>(ds.get(), H5T_NATIVE_FLOAT, d, path, name);
    return m;
  }
  if (d.type_class == H5T_FLOAT)
    return convert_all<float>(read_all<double>(ds.get(), H5T_NATIVE_DOUBLE, d, path, name), d, path,
                              detail::io::convert_to_float<double>);
  return convert_all<float>(read_all<int64_t>(ds.get(), H5T_NATIVE_INT64, d, path, name), d, path,
                            detail::io::convert_to_float<int64_t>);
}

HostMatrix<int64_t> read_indices(hid_t file, const std::string& path, const std::string& name) {
  Hid ds = open_dataset(file, path, name);
  Dataset d = describe(ds.get(), path, name);
  if (d.type_class == H5T_FLOAT)
    return convert_all<int64_t>(read_all<double>(ds.get(), H5T_NATIVE_DOUBLE, d, path, name), d, path,
                                detail::io::convert_to_int64<double>);
  HostMatrix<int64_t> m(d.rows, d.cols);
  m.data = read_all<int64_t>(ds.get(), H5T_NATIVE_INT64, d, path, name);
  return m;
}

HostMatrix<int32_t> narrow_to_int32(const HostMatrix<int64_t>& wide, const std::string& path) {
  HostMatrix<int32_t> m(wide.rows, wide.cols);
  for (size_t i = 0; i < wide.data.size(); ++i) {
    int64_t v = wide.data[i];
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      detail::io::fail_value({path, wide.cols}, i, v, "in dataset 'neighbors' does not fit int32");
    m.data[i] = static_cast<int32_t>(v);
  }
  return m;
}

/// The "distance" attribute, stored by h5py as a variable-length string, by other writers as fixed-length.
/// H5Aread writes every element of the attribute: it must hold exactly one string (a scalar or one-element array),
/// and a fixed-length one no longer than the file, before anything is read into a buffer sized for one.
std::string read_distance_attribute(hid_t file, const std::string& path, const std::string& fallback) {
  if (H5Aexists(file, "distance") <= 0) return fallback;
  Hid attr(H5Aopen(file, "distance", H5P_DEFAULT), H5Aclose);
  Hid type(H5Aget_type(attr.get()), H5Tclose);
  if (!attr.valid() || H5Tget_class(type.get()) != H5T_STRING)
    detail::fail(ErrorCode::Format, "'", path, "': attribute 'distance' is not a string");
  Hid space(H5Aget_space(attr.get()), H5Sclose);
  const hssize_t values = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  if (values != 1)
    detail::fail(ErrorCode::Format, "'", path, "': attribute 'distance' holds ", values,
                 " values (need one string)");
  Hid mem_type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_cset(mem_type.get(), H5Tget_cset(type.get()));  // HDF5 does not convert between ASCII and UTF-8
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Tset_size(mem_type.get(), H5T_VARIABLE);
    char* text = nullptr;
    if (H5Aread(attr.get(), mem_type.get(), &text) < 0 || text == nullptr)
      detail::fail(ErrorCode::Format, "'", path, "': cannot read attribute 'distance'");
    std::string out(text);
    H5free_memory(text);
    return out;
  }
  const size_t size = H5Tget_size(type.get());
  std::error_code size_error;
  const auto file_bytes = std::filesystem::file_size(path, size_error);
  if (size == 0 || (!size_error && size > file_bytes))
    detail::fail(ErrorCode::Format, "'", path, "': attribute 'distance' claims a string of ", size, " bytes");
  H5Tset_size(mem_type.get(), size);
  std::string out(size, '\0');
  if (H5Aread(attr.get(), mem_type.get(), out.data()) < 0)
    detail::fail(ErrorCode::Format, "'", path, "': cannot read attribute 'distance'");
  out.resize(std::strlen(out.c_str()));  // fixed-length strings are null-padded
  return out;
}

template <class T>
void write_dataset(hid_t file, const std::string& path, const char* name, hid_t mem_type, hid_t file_type,
                   const HostMatrix<T>& m) {
  hsize_t dims[2] = {static_cast<hsize_t>(m.rows), static_cast<hsize_t>(m.cols)};
  Hid space(H5Screate_simple(2, dims, nullptr), H5Sclose);
  Hid ds(H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  bool ok = space.valid() && ds.valid();
  if (ok && !m.data.empty()) ok = H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data.data()) >= 0;
  if (!ok) detail::fail(ErrorCode::Io, "cannot write dataset '", name, "' to '", path, "'");
}

/// Attributes as ann-benchmarks writes them (h5py: variable-length UTF-8 strings, integer dimension).
void write_string_attribute(hid_t file, const std::string& path, const char* name, const std::string& value) {
  Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attr(H5Acreate2(file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* text = value.c_str();
  if (!attr.valid() || H5Awrite(attr.get(), type.get(), &text) < 0)
    detail::fail(ErrorCode::Io, "cannot write attribute '", name, "' to '", path, "'");
}

void write_int_attribute(hid_t file, const std::string& path, const char* name, int64_t value) {
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attr(H5Acreate2(file, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_INT64, &value) < 0)
    detail::fail(ErrorCode::Io, "cannot write attribute '", name, "' to '", path, "'");
}

/// The datasets and attributes of an ann-benchmarks file.
void write_ann_file(hid_t file, const std::string& path, const AnnDataset& data) {
  write_dataset(file, path, "train", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data.train);
  write_dataset(file, path, "test", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data.test);
  if (data.neighbors.rows > 0)
    write_dataset(file, path, "neighbors", H5T_NATIVE_INT32, H5T_STD_I32LE, data.neighbors);
  if (data.distances.rows > 0)
    write_dataset(file, path, "distances", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data.distances);
  write_string_attribute(file, path, "distance", data.distance);
  write_string_attribute(file, path, "type", "dense");
  write_string_attribute(file, path, "point_type", "float");
  write_int_attribute(file, path, "dimension", data.train.cols);
}

}  // namespace

namespace detail::io {
HostMatrix<float> read_hdf5_matrix(const std::string& path, const std::string& dataset) {
  QuietHdf5Errors quiet;
  Hid file = open_for_reading(path);
  return read_float(file.get(), path, dataset);
}

HostMatrix<int64_t> read_hdf5_indices(const std::string& path, const std::string& dataset) {
  QuietHdf5Errors quiet;
  Hid file = open_for_reading(path);
  return read_indices(file.get(), path, dataset);
}
}  // namespace detail::io

bool hdf5_supported() noexcept { return true; }

AnnDataset read_ann_hdf5(const std::string& path) {
  QuietHdf5Errors quiet;
  Hid file = open_for_reading(path);
  AnnDataset out;
  out.train = read_float(file.get(), path, "train");
  out.test = read_float(file.get(), path, "test");
  if (H5Lexists(file.get(), "neighbors", H5P_DEFAULT) > 0)
    out.neighbors = narrow_to_int32(read_indices(file.get(), path, "neighbors"), path);
  if (H5Lexists(file.get(), "distances", H5P_DEFAULT) > 0) out.distances = read_float(file.get(), path, "distances");
  out.distance = read_distance_attribute(file.get(), path, out.distance);
  return out;
}

void write_ann_hdf5(const std::string& path, const AnnDataset& data) {
  QuietHdf5Errors quiet;
  detail::io::StagedPath staged(path);  // written under a temporary name, renamed when complete
  {
    Hid file(H5Fcreate(staged.write_path().c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) detail::fail(ErrorCode::Io, "cannot create HDF5 file '", path, "'");
    write_ann_file(file.get(), path, data);
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) detail::fail(ErrorCode::Io, "cannot write '", path, "'");
    if (H5Fclose(file.release()) < 0) detail::fail(ErrorCode::Io, "cannot write '", path, "'");
  }
  staged.commit();
}

}  // namespace gknn

#else  // no HDF5 in this build

namespace gknn {
namespace {
[[noreturn]] void no_hdf5(const std::string& path) {
  detail::fail(ErrorCode::Unsupported, "cannot use '", path,
               "': this gknn build has no HDF5 support (install the HDF5 C library, e.g. libhdf5-dev, and reconfigure)");
}
}  // namespace

namespace detail::io {
HostMatrix<float> read_hdf5_matrix(const std::string& path, const std::string&) { no_hdf5(path); }
HostMatrix<int64_t> read_hdf5_indices(const std::string& path, const std::string&) { no_hdf5(path); }
}  // namespace detail::io

bool hdf5_supported() noexcept { return false; }
AnnDataset read_ann_hdf5(const std::string& path) { no_hdf5(path); }
void write_ann_hdf5(const std::string& path, const AnnDataset&) { no_hdf5(path); }

}  // namespace gknn

#endif
