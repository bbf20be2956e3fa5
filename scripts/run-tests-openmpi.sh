#!/usr/bin/env bash
# The whole test suite once more, built against Open MPI (Debian's openmpi-bin
# and libopenmpi-dev) in ./build-openmpi, beside the MPICH build in ./build.
#
# Installing Debian's Open MPI leaves the system's `mpicc`/`mpiexec` as they
# were (install-packages.sh): this script names Open MPI's compilers and
# launcher explicitly instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-packages.sh libopenmpi-dev openmpi-bin
# The real codes the MPI layer's tests run (tests/mpi_layer/real).
scripts/install-packages.sh $(grep -v '^#' tests/mpi_layer/real/packages.txt)

export BUILD_DIR=build-openmpi
export CMAKE_ARGS="-DMPI_C_COMPILER=mpicc.openmpi -DMPI_CXX_COMPILER=mpicxx.openmpi
  -DMPI_Fortran_COMPILER=mpif90.openmpi -DMPIEXEC_EXECUTABLE=$(command -v mpiexec.openmpi) ${CMAKE_ARGS:-}"
source scripts/setup.sh

# Open MPI refuses to run as root unless told twice, and to start more ranks
# than cores (the suite runs up to 4 on 2) unless told it may oversubscribe.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

# Open MPI 4.1 keeps a user's jobs in one session folder, which a job that ends
# removes when it is empty while a job starting beside it may just be entering
# it: that job fails in orte_init ("mkdir ... File exists"). The suite starts
# jobs side by side, so a folder of ours inside keeps it for as long as it runs.
session=$(mpiexec.openmpi -n 1 sh -c 'echo "$OMPI_MCA_orte_top_session_dir"' 2>/dev/null || true)
if [ -n "$session" ]; then
  mkdir -p -m 700 "$session" "$session/pgstrategy-tests"
  trap 'rmdir "$session/pgstrategy-tests" "$session" 2>/dev/null || true' EXIT
fi
echo "== ctest (Open MPI)"
# The many-ranks-per-node layouts (label scale) check fairring's own shapes,
# which the MPICH run covers.
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 -LE scale "$@"
