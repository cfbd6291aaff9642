// row_range.hpp: the row-range argument of the readers that read part of a file (vecs, npy).
#pragma once

#include <cstdint>
#include <string>

#include "gknn/error.hpp"

namespace gknn::detail::io {

/// Resolves count < 0 to "to the end" and rejects ranges outside [0, rows], naming the file.
inline int64_t checked_count(const std::string& path, int64_t rows, int64_t first, int64_t count) {
  if (first < 0 || first > rows || (count >= 0 && count > rows - first))
    detail::fail(ErrorCode::InvalidArgument, "row range [", first, ", ",
                 count < 0 ? std::string("end") : std::to_string(first + count), ") is outside the ", rows,
                 " rows of '", path, "'");
  return count < 0 ? rows - first : count;
}

}  // namespace gknn::detail::io
