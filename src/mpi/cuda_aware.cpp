#include "mpi/cuda_aware.h"

#include <dlfcn.h>
#include <mpi.h>

namespace pg::mpi {

bool cuda_aware() {
  static const bool aware = [] {
    // The library that defines MPI_Init, searched alone: it may have been
    // loaded with RTLD_LOCAL, out of reach of RTLD_DEFAULT.
    Dl_info where;
    if (dladdr(reinterpret_cast<void *>(&MPI_Init), &where) == 0 || !where.dli_fname) return false;
    void *mpi = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!mpi) return false;
    using Query = int (*)();
    const auto query = reinterpret_cast<Query>(dlsym(mpi, "MPIX_Query_cuda_support"));
    const bool yes = query && query() == 1;
    dlclose(mpi);
    return yes;
  }();
  return aware;
}

}  // namespace pg::mpi
