// backend.hpp: the contract between the core (validation, metric rewriting, padding) and each backend.
//
// The core hands a backend only validated input in key form (keys.hpp): finite float32 rows, equal
// dimensions, 1 <= k <= n, metric in {SquaredL2, InnerProduct, L1, Linf, Lp}, cosine rows pre-normalised.
// A backend returns q x k ascending keys with base-row indices, sorted in the total order (order.hpp).
// Each backend resolves Auto and rejects algorithms it does not have with ErrorCode::Unsupported.
#pragma once

#include <memory>

#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "gknn/types.hpp"

namespace gknn::detail {

/// Keys of search(): same shape as Result.
using KeyResult = Result;

/// A database kept by a backend between searches (the Index's storage).
class ResidentStore {
 public:
  virtual ~ResidentStore() = default;
  virtual void append(FloatView rows) = 0;  ///< already validated and in key form
  virtual void clear() = 0;
  virtual int64_t size() const = 0;
  virtual KeyResult search(FloatView queries, const SearchParams& key_params) const = 0;
};

namespace cpu {
KeyResult search(FloatView base, FloatView queries, const SearchParams& key_params);
/// Ascending select over rows; labels may be null (column index is the label).
Result select_k(FloatView keys, const int64_t* labels, int64_t k, const SelectParams& params);
std::unique_ptr<ResidentStore> make_store(int64_t dim);
std::vector<DistanceAlgorithm> distance_algorithms(Metric user_metric);
std::vector<SelectCapability> select_algorithms();
}  // namespace cpu

namespace cuda {
/// False when built without CUDA or when no device is visible.
bool available();
KeyResult search(FloatView base, FloatView queries, const SearchParams& key_params);
Result select_k(FloatView keys, const int64_t* labels, int64_t k, const SelectParams& params);
std::unique_ptr<ResidentStore> make_store(int64_t dim, int device);
std::vector<DistanceAlgorithm> distance_algorithms(Metric user_metric);
std::vector<SelectCapability> select_algorithms();
/// Visible devices; empty without CUDA, without a device, or when the driver reports an error.
std::vector<DeviceInfo> devices();
}  // namespace cuda

}  // namespace gknn::detail
