// device_scope.cu: see device_scope.cuh.
#include "cuda/common/device.cuh"
#include "cuda/common/device_scope.cuh"
#include "cuda/common/error.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {

DeviceScope::DeviceScope(int device) {
  GKNN_CUDA_TRY(cudaGetDevice(&previous_));
  device_props(device);  // cached properties; makes `device` current
}

DeviceScope::DeviceScope(int device, std::nothrow_t) noexcept {
  GKNN_CUDA_TRY_NOTHROW(cudaGetDevice(&previous_));
  if (device != previous_) GKNN_CUDA_TRY_NOTHROW(cudaSetDevice(device));
}

DeviceScope::~DeviceScope() { GKNN_CUDA_TRY_NOTHROW(cudaSetDevice(previous_)); }

std::pair<int, const float*> device_address(const float* data, std::string_view what) {
  cudaPointerAttributes attr{};
  const cudaError_t err = cudaPointerGetAttributes(&attr, data);
  if (err != cudaSuccess) cudaGetLastError();  // not a sticky error: later calls must not see it
  int current = 0;
  GKNN_CUDA_TRY(cudaGetDevice(&current));
  if (err == cudaSuccess && attr.type != cudaMemoryTypeUnregistered) {
    const void* address = attr.devicePointer ? attr.devicePointer : data;
    return {attr.device >= 0 ? attr.device : current, static_cast<const float*>(address)};
  }
  // Pageable host memory: only devices that access it coherently (HMM, ATS) may read it in a kernel.
  int pageable = 0;
  GKNN_CUDA_TRY(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, current));
  GKNN_EXPECT(pageable != 0, ErrorCode::InvalidArgument, what,
              ": a Memory::Device view whose pointer is not CUDA memory (host memory? pass Memory::Host)");
  return {current, data};
}

}  // namespace gknn::detail::cuda
