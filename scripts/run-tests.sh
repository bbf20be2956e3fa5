#!/usr/bin/env bash
# Quick start, command 2: set up, build, and run the whole test suite.
set -euo pipefail
# The PyTorch backend and its tests too, in a venv that scripts/setup-python.sh
# makes (about 3 GB of wheels the first time); PGS_TORCH=0 leaves it out, and
# those tests then report skipped, as they do when no venv can be made.
if [ "${PGS_TORCH:-1}" = 1 ]; then
  if torch_python=$("$(dirname "${BASH_SOURCE[0]}")/setup-python.sh"); then
    export CMAKE_ARGS="-DPGS_TORCH_PYTHON=$torch_python ${CMAKE_ARGS:-}"
  else
    echo "== no PyTorch environment could be made: the python tests will report skipped"
  fi
fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The real codes the MPI layer's tests run (tests/mpi_layer/real): Debian's
# packages of MPI programs, which report skipped without them.
scripts/install-packages.sh $(grep -v '^#' tests/mpi_layer/real/packages.txt)
echo "== ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 "$@"
