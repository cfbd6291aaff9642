// device_scope.cuh: which device a device view's memory belongs to, and making it current for a while (the value
// scan of device views, the exactness guard's device primitives, the frees of kept device blocks).
#pragma once

#include <new>
#include <string_view>
#include <utility>

#include <cuda_runtime.h>

namespace gknn::detail::cuda {

/// Makes `device` current and gives the caller's current device back afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  /// For frees and trims (noexcept code): a failure is logged, not thrown.
  DeviceScope(int device, std::nothrow_t) noexcept;
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

/// The device that reads `data` and the address it reads it at; InvalidArgument (naming `what`) for memory no
/// kernel may read.
std::pair<int, const float*> device_address(const float* data, std::string_view what);

}  // namespace gknn::detail::cuda
