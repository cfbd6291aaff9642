// host_parallel.hpp: the host-side parallel loops on a search call's path (value scan of the queries, copies into
// and out of pinned staging), on one OpenMP team of constant size.
//
// Why one size: libgomp keeps the threads of the last team of the calling thread, but a region with fewer threads
// (other than one) ends the extra ones, and the next larger region starts new ones (pthread_create). A scan on 16
// threads followed by a 2-thread copy therefore created 14 threads per search call: 1.9 ms of a 2.9 ms search on
// the H100's host, 1.2 ms here with OMP_NUM_THREADS=16 (tests/host_parallel_test.cpp counts the threads). Every
// region here runs on the whole team (host_team()); the work is cut into as many parts as its size pays for, and
// team threads beyond the parts have nothing to do. A part count of one runs on the caller without a region.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gknn::detail {

/// Threads of every host_parallel region: OpenMP's default team of the calling thread (omp_get_max_threads()).
int host_team();

/// How many parts `work` units make when a part should hold at least `min_per_part` units: in [1, host_team()].
int host_parts(int64_t work, int64_t min_per_part);

/// Runs body(part) for every part in [0, parts) (parts <= host_team()), on the team when parts > 1.
/// body must not throw.
void host_parallel(int parts, void (*body)(void* context, int part), void* context);

template <class Body>
void host_parallel(int parts, Body&& body) {
  host_parallel(
      parts, [](void* c, int part) { (*static_cast<Body*>(c))(part); }, static_cast<void*>(&body));
}

/// memcpy of `bytes` bytes in parts of at least 512 KiB on the host team (one thread reaches a fraction of the
/// host's copy bandwidth, and a destination touched for the first time also pays its page faults there).
void parallel_memcpy(void* dst, const void* src, size_t bytes);

}  // namespace gknn::detail
