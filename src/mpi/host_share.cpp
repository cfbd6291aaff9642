// host_share.cpp: how the ranks of one host share its cores (gknn::mpi::host_share, see gknn/mpi.hpp).
#include <sched.h>

#include <algorithm>
#include <string>
#include <thread>

#include "core/host_parallel.hpp"
#include "gknn/mpi.hpp"
#include "mpi/collective.hpp"

namespace gknn::mpi {
namespace {

int ranks_on_this_host(MPI_Comm comm) {
  MPI_Comm host = MPI_COMM_NULL;
  detail::mpi::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, detail::mpi::rank_of(comm), MPI_INFO_NULL, &host),
                    "MPI_Comm_split_type (ranks of this host)");
  const int ranks = detail::mpi::size_of(host);
  MPI_Comm_free(&host);
  return ranks;
}

int cores_of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

std::string HostShare::notice() const {
  const int share = std::max(1, cores / std::max(1, local_ranks));
  if (bound_cores >= share) return {};
  return "this rank may run on " + std::to_string(bound_cores) + " of the host's " + std::to_string(cores) +
         " cores (" + std::to_string(local_ranks) + " rank(s) on this host, a share of " + std::to_string(share) +
         "): the launcher bound it (Open MPI binds each rank to one core by default); the host side of a search runs "
         "on " + std::to_string(threads) + " thread(s). mpirun --bind-to none, or --map-by slot:PE=" +
         std::to_string(share) + ", gives each rank its share";
}

HostShare host_share(MPI_Comm comm) {
  HostShare s;
  s.local_ranks = ranks_on_this_host(comm);
  s.cores = detail::usable_cpus();  // a container's CPU quota is the host's cores as far as its ranks can use them
  s.bound_cores = cores_of_this_process();
  s.threads = std::max(1, std::min(s.bound_cores, s.cores / s.local_ranks));
  return s;
}

}  // namespace gknn::mpi
