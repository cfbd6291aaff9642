#include "core/host_parallel.hpp"

#include <algorithm>
#include <cstring>

#include <omp.h>

namespace gknn::detail {

int host_team() { return std::max(1, omp_get_max_threads()); }

int host_parts(int64_t work, int64_t min_per_part) {
  const int64_t parts = work / std::max<int64_t>(1, min_per_part);
  return static_cast<int>(std::clamp<int64_t>(parts, 1, host_team()));
}

void host_parallel(int parts, void (*body)(void*, int), void* context) {
  const int team = host_team();
  parts = std::clamp(parts, 1, team);
  if (parts == 1) {
    body(context, 0);
    return;
  }
  // The whole team, whatever `parts` is (see host_parallel.hpp: a smaller team would end threads).
#pragma omp parallel num_threads(team)
  {
    // A region inside another one may get fewer threads than asked: the parts are dealt round the actual team.
    for (int part = omp_get_thread_num(); part < parts; part += omp_get_num_threads()) body(context, part);
  }
}

void parallel_memcpy(void* dst, const void* src, size_t bytes) {
  constexpr int64_t kMinPart = int64_t(1) << 19;
  const int parts = host_parts(static_cast<int64_t>(bytes), kMinPart);
  if (parts == 1) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return;
  }
  const size_t chunk = (bytes + parts - 1) / parts;
  host_parallel(parts, [&](int part) {
    const size_t begin = std::min(bytes, static_cast<size_t>(part) * chunk), end = std::min(bytes, begin + chunk);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  });
}

}  // namespace gknn::detail
