#!/usr/bin/env bash
# Quick start, command 1: set up, build, and run the example job on 4 ranks
# with the CPU default backend (it prints what it did).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
echo "== mpiexec -n 4 $BUILD_DIR/examples/c/allreduce_demo"
mpiexec -n 4 "$BUILD_DIR/examples/c/allreduce_demo" "$@"
