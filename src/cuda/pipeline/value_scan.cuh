// value_scan.cuh: the device scan's cached resources (value_scan.cu; the scan itself is core/backend.hpp's
// device_value_stats).
#pragma once

namespace gknn::detail::cuda {

/// Frees the idle scan slots of every device (streams, result words); part of release_cached_device_resources
/// (hooks.hpp). A later scan makes new ones.
void release_scan_slots();

}  // namespace gknn::detail::cuda
