// resident.cuh: the CUDA ResidentStore behind gknn::Index — the database lives in device memory.
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace gknn::detail::cuda {

std::unique_ptr<detail::ResidentStore> make_resident_store(int64_t dim, int device);

/// Throws InvalidArgument unless `device` is a visible CUDA device; makes it current.
void use_device(int device);

}  // namespace gknn::detail::cuda
