// arrays.cpp: host buffers viewed in place, DLPack capsules described (see arrays.hpp).
#include "arrays.hpp"

#include "gknn/error.hpp"

#ifdef GKNN_HAS_DLPACK
#include <dlpack/dlpack.h>
#endif

namespace gknn::python {

HostMatrix::HostMatrix(const py::buffer& buffer, const char* what)
    : info_(buffer.request()), what_(what) {
  GKNN_EXPECT(info_.ndim == 2, ErrorCode::InvalidArgument, what, ": expected a 2-D array (rows x dimension), got ",
              info_.ndim, " dimension(s)");
  const bool is_float = info_.format == py::format_descriptor<float>::format() && info_.itemsize == 4;
  bytes_ = info_.itemsize == 1 && (info_.format == "B" || info_.format == "c");
  GKNN_EXPECT(is_float || bytes_, ErrorCode::InvalidArgument, what, ": element type '", info_.format,
              "' is not float32 or uint8");
  rows_ = info_.shape[0];
  cols_ = info_.shape[1];
  const int64_t item = info_.itemsize;
  GKNN_EXPECT(cols_ <= 1 || info_.strides[1] == item, ErrorCode::InvalidArgument, what,
              ": the elements of a row are not contiguous (column stride ", info_.strides[1], " bytes)");
  GKNN_EXPECT(rows_ <= 1 || (info_.strides[0] >= cols_ * item && info_.strides[0] % item == 0),
              ErrorCode::InvalidArgument, what, ": row stride ", info_.strides[0], " bytes is not a whole number of ",
              "rows' elements");
  stride_ = rows_ <= 1 ? cols_ : info_.strides[0] / item;
}

FloatView HostMatrix::floats() const {
  GKNN_EXPECT(!bytes_, ErrorCode::InvalidArgument, what_, ": expected float32, got uint8");
  return {static_cast<const float*>(info_.ptr), rows_, cols_, stride_};
}

ByteView HostMatrix::bytes() const {
  GKNN_EXPECT(bytes_, ErrorCode::InvalidArgument, what_, ": expected uint8, got float32");
  return {static_cast<const uint8_t*>(info_.ptr), rows_, cols_, stride_};
}

const int64_t* int64_data(const py::buffer_info& info, int64_t expected_size, const char* what) {
  GKNN_EXPECT(info.ndim == 1 && info.itemsize == 8 && (info.format == "l" || info.format == "q"),
              ErrorCode::InvalidArgument, what, ": expected a 1-D int64 array");
  GKNN_EXPECT(info.shape[0] == expected_size, ErrorCode::InvalidArgument, what, ": ", info.shape[0],
              " entries for ", expected_size, " rows");
  GKNN_EXPECT(info.shape[0] <= 1 || info.strides[0] == 8, ErrorCode::InvalidArgument, what, ": not contiguous");
  return static_cast<const int64_t*>(info.ptr);
}

#ifdef GKNN_HAS_DLPACK
namespace {
std::string dtype_name(const DLDataType& t) {
  if (t.lanes != 1) return "vector";
  switch (t.code) {
    case kDLFloat: return "float" + std::to_string(t.bits);
    case kDLInt: return "int" + std::to_string(t.bits);
    case kDLUInt: return "uint" + std::to_string(t.bits);
    default: return "other";
  }
}
}  // namespace

py::dict describe_dlpack(const py::capsule& capsule) {
  GKNN_EXPECT(std::string(capsule.name() ? capsule.name() : "") == "dltensor", ErrorCode::InvalidArgument,
              "__dlpack__() did not return an unconsumed 'dltensor' capsule");
  const auto* managed = static_cast<const DLManagedTensor*>(capsule.get_pointer());
  const DLTensor& t = managed->dl_tensor;
  py::list shape, strides;
  for (int i = 0; i < t.ndim; ++i) {
    shape.append(t.shape[i]);
    if (t.strides) strides.append(t.strides[i]);  // in elements
  }
  py::dict out;
  out["data"] = reinterpret_cast<uintptr_t>(static_cast<const char*>(t.data) + t.byte_offset);
  out["shape"] = py::tuple(shape);
  out["strides"] = t.strides ? py::object(py::tuple(strides)) : py::none();
  out["dtype"] = dtype_name(t.dtype);
  out["device_type"] = t.device.device_type == kDLCUDA ? "cuda" : t.device.device_type == kDLCPU ? "cpu" : "other";
  out["device_id"] = t.device.device_id;
  return out;
}

bool has_dlpack() noexcept { return true; }
#else
py::dict describe_dlpack(const py::capsule&) {
  detail::fail(ErrorCode::Unsupported, "this gknn module was built without DLPack (install libdlpack-dev and rebuild)");
}

bool has_dlpack() noexcept { return false; }
#endif

}  // namespace gknn::python
