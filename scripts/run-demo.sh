#!/usr/bin/env bash
# Quick start, command 1: set up, build, and run the example job. It runs the
# same allreduce with the CPU default backend (mpi, unless PGS_BACKEND names
# another) and with fairring, checks the results, prints the two times side by
# side, and ends with OK (exit status 0) or FAILED.
#
#   scripts/run-demo.sh [COUNT...]     COUNT: float32 elements per allreduce
#                                      (default: 64 KiB, 4 MiB and 64 MiB)
#
# Ranks: one per core (nproc), at least 2; DEMO_RANKS=N sets another number.
# Each rank holds two buffers of the largest size (128 MiB by default).
# BUILD_DIR and CMAKE_ARGS are passed on to setup.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

cores=$(nproc)
ranks=${DEMO_RANKS:-$((cores > 2 ? cores : 2))}
if ! [[ $ranks =~ ^[1-9][0-9]*$ ]]; then
  echo "DEMO_RANKS must be a positive whole number, not '$ranks'" >&2
  exit 2
fi
echo "== mpiexec -n $ranks $BUILD_DIR/examples/c/allreduce_demo${*:+ $*}   # $cores cores"
mpiexec -n "$ranks" "$BUILD_DIR/examples/c/allreduce_demo" "$@"
