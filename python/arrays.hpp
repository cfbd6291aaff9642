// arrays.hpp: the binding's adapter between Python array objects and gknn's views.
//
// Host arrays arrive through the buffer protocol (numpy, memoryview, ...) already as float32 or uint8 with
// contiguous rows (the Python layer, gknn/_arrays.py, converts anything else once); they are viewed in place,
// row stride included. Device arrays (torch/cupy CUDA tensors) are described by DeviceMatrix, filled from
// __cuda_array_interface__ in Python or from a DLPack capsule here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "gknn/types.hpp"

namespace gknn::python {

namespace py = pybind11;

/// A 2-D host buffer seen in place. Keeps the Py_buffer alive for as long as the view is used.
class HostMatrix {
 public:
  /// `what` names the argument in error messages ("base", "queries"). Throws gknn::Error(InvalidArgument)
  /// for a buffer that is not 2-D, whose elements are not float32/uint8, or whose rows are not contiguous.
  HostMatrix(const py::buffer& buffer, const char* what);
  bool is_bytes() const noexcept { return bytes_; }
  FloatView floats() const;
  ByteView bytes() const;
  int64_t rows() const noexcept { return rows_; }
  int64_t cols() const noexcept { return cols_; }

 private:
  py::buffer_info info_;
  const char* what_;
  bool bytes_ = false;
  int64_t rows_ = 0, cols_ = 0, stride_ = 0;
};

/// A contiguous int64 vector (ids, labels); throws for anything else.
const int64_t* int64_data(const py::buffer_info& info, int64_t expected_size, const char* what);

/// A numpy array that owns `values` without copying them (the vector moves into the array's base capsule).
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& values, int64_t rows, int64_t cols) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({rows, cols}, owned->data(), owner);
}

/// The same for a Result's array: the numpy array takes over its storage (no copy).
template <class T>
py::array_t<T> to_numpy(HostArray<T>&& values, int64_t rows, int64_t cols) {
  auto* owned = new HostArray<T>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<HostArray<T>*>(p); });
  return py::array_t<T>({rows, cols}, owned->data(), owner);
}

/// A 2-D array in device memory, as __cuda_array_interface__ or DLPack describe it.
struct DeviceMatrix {
  uintptr_t data = 0;
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0;  ///< elements
  std::string dtype;       ///< numpy-style type string: "float32", "uint8", ...
  int device = 0;
};

/// Reads a "dltensor" capsule (from obj.__dlpack__()) into (data, shape, strides, dtype, device) without taking
/// ownership: the producer's deleter runs when the capsule is collected. Returns a dict, so the Python layer
/// treats DLPack and __cuda_array_interface__ alike.
py::dict describe_dlpack(const py::capsule& capsule);
/// Whether this module was compiled with DLPack support (the header from libdlpack-dev).
bool has_dlpack() noexcept;

}  // namespace gknn::python
