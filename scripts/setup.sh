#!/usr/bin/env bash
# Installs what the build needs (Debian/Ubuntu packages, only those missing),
# then configures and builds pgstrategy in ./build. Sourced by run-demo.sh and
# run-tests.sh; BUILD_DIR and extra CMake options (CMAKE_ARGS) may be set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# slurm-wlm and munge: the tests start a private Slurm (tests/slurm); libpmix-dev
# lets its srun load the pmix plugin (checked: MPICH does not speak PMIx).
packages=(build-essential cmake pkg-config gfortran mpich libmpich-dev hwloc libhwloc-dev libssl-dev
          libgtest-dev libgmock-dev googletest libgloo-dev python3-matplotlib
          slurm-wlm munge libpmix-dev)
scripts/install-packages.sh "${packages[@]}"

BUILD_DIR=${BUILD_DIR:-build}
echo "== configuring and building in $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >"$BUILD_DIR.configure.log" 2>&1 ||
  { cat "$BUILD_DIR.configure.log"; exit 1; }
grep -E "^-- pgstrategy" "$BUILD_DIR.configure.log" || true
cmake --build "$BUILD_DIR" -j"$(nproc)"
