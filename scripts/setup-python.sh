#!/usr/bin/env bash
# The Python environment of the PyTorch backend's tests (tests/python): a venv
# in .venv-torch (git-ignored) with torch, Lightning, mpi4py,
# scikit-build-core and expecttest (torch's own test suite imports it), made
# from Debian's python3 (python3-venv, python3-dev for the extension's
# headers). Run by scripts/run-tests.sh unless PGS_TORCH=0; VENV may name
# another folder. Prints the venv's python last.
#
# torch from PyPI is a CUDA build (about 3 GB of wheels with NVIDIA's
# libraries; it does not import without them): the first install downloads
# them, later ones come from pip's cache. mpi4py's binary wheel works with the
# tests' MPICH through a soname link (tests/python/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=$(realpath -m "${VENV:-.venv-torch}")

scripts/install-packages.sh python3-venv python3-dev

# torch imported (a CUDA build that lacks its NVIDIA libraries does not), the others present.
if ! "$VENV/bin/python" -c "import torch, importlib.util as u
assert all(u.find_spec(m) for m in ('lightning', 'mpi4py', 'scikit_build_core', 'expecttest'))" 2>/dev/null; then
  echo "== making the Python environment in $VENV (torch, lightning, mpi4py, scikit-build-core, expecttest)" >&2
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check torch lightning mpi4py scikit-build-core expecttest >&2
fi
echo "$VENV/bin/python"
