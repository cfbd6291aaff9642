// cuda_disabled.cpp: the join's CUDA searcher in a build without CUDA.
#ifndef GKNN_HAS_CUDA
#include "gknn/error.hpp"
#include "join/grid_searcher.hpp"

namespace gknn::detail::join {

std::unique_ptr<GridSearcher> make_cuda_searcher(const Problem&, const Output&, int, int, int) {
  detail::fail(ErrorCode::Unsupported, "knn_join: the GPU modes need the CUDA backend, and this build has none");
}

}  // namespace gknn::detail::join
#endif
