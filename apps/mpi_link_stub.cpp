// apps/mpi_link.h in a build without MPI: Start() says so.
#include "apps/mpi_link.h"

namespace cky::apps {

bool MpiBuilt() { return false; }

StatusOr<std::unique_ptr<MpiLink>> MpiLink::Start() {
  return Status::Error(
      "--mpi: this build has no MPI (install libopenmpi-dev and openmpi-bin, e.g. with "
      "scripts/install-deps, and build again)");
}

}  // namespace cky::apps
