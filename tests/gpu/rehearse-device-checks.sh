#!/usr/bin/env bash
# Rehearses run-device-checks.sh on a Debian machine without a GPU, the way a
# bare GPU machine would run it: the system's MPI libraries, hwloc, pkg-config
# and GoogleTest are hidden (a private mount namespace in which /dev/null
# covers each of their installed files), the environment is emptied, NCCL is
# found through a Python package, and PGS_DEVICE_CHECK_REHEARSAL=1 lets the
# GPU tests' skips pass. What it proves: the carried files (tests/gpu/.carry)
# suffice to configure, build, launch and run everything that needs no GPU.
# Root only (mount namespaces). Nothing outside the namespace is touched.
#
#   tests/gpu/rehearse-device-checks.sh [build-dir]    (default: build-rehearsal)
#
# PYTHON may name a Python whose nvidia-nccl-cu13 package is real; otherwise a
# stand-in package is made in a temporary folder from the NCCL next to CUDA.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$src/build-rehearsal}"
[ "$(id -u)" = 0 ] || { echo "rehearse-device-checks: needs root (mount namespaces)" >&2; exit 1; }
[ -d "$src/tests/gpu/.carry/root" ] || "$src/tests/gpu/prepare-device-carry.sh"
rm -rf "$build"  # a fresh folder, as on the device machine

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# Every installed file of the packages the device machine lacks.
# (libssl-dev, not libssl3: the machine's own tools need that one, and so may the device machine's.)
hidden_packages=(mpich libmpich-dev libmpich12 openmpi-bin libopenmpi-dev libopenmpi3 libhwloc-dev libhwloc15 libssl-dev
                 libhwloc-plugins hwloc libucx0 libpmix-dev libpmix2 libgtest-dev libgmock-dev googletest
                 pkgconf pkgconf-bin libpkgconf3 pkg-config)
for p in "${hidden_packages[@]}"; do dpkg -L "$p" 2>/dev/null || true; done |
  while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done | sort -u >"$scratch/hidden"

python="${PYTHON:-}"
site=""
if [ -z "$python" ]; then
  # A stand-in for the nvidia-nccl-cu13 wheel: its layout and its metadata.
  python=python3
  cuda="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
  site="$scratch/site"
  mkdir -p "$site/nvidia/nccl/include" "$site/nvidia/nccl/lib" "$site/nvidia_nccl_cu13-0.0.dist-info"
  cp "$cuda/include/nccl.h" "$site/nvidia/nccl/include/"
  cp "$(readlink -f "$cuda/lib64/libnccl.so.2" 2>/dev/null || readlink -f "$cuda/lib/libnccl.so.2")" \
     "$site/nvidia/nccl/lib/libnccl.so.2"
  printf 'Metadata-Version: 2.1\nName: nvidia-nccl-cu13\nVersion: 0.0\n' >"$site/nvidia_nccl_cu13-0.0.dist-info/METADATA"
  printf 'nvidia/nccl/include/nccl.h,,\nnvidia/nccl/lib/libnccl.so.2,,\n' >"$site/nvidia_nccl_cu13-0.0.dist-info/RECORD"
fi
python_dir="$(dirname "$(command -v "$python")")"
cuda_bin="$(dirname "$(command -v nvcc)")"

echo "rehearse-device-checks: hiding $(wc -l <"$scratch/hidden") installed files of: ${hidden_packages[*]}"
unshare --mount --propagation private bash -c '
  set -eu
  while read -r f; do mount --bind /dev/null "$f"; done <"$1/hidden"
  for tool in mpicc mpiexec pkg-config; do
    if command -v "$tool" >/dev/null && "$tool" --version >/dev/null 2>&1; then
      echo "rehearse-device-checks: $tool still works: not hidden" >&2; exit 1
    fi
  done
  exec env -i HOME="$HOME" PATH="$2:$3:/usr/bin:/bin" ${4:+PYTHONPATH="$4"} PGS_DEVICE_CHECK_REHEARSAL=1 \
    "$5/tests/gpu/run-device-checks.sh" "$6"
' rehearse "$scratch" "$python_dir" "$cuda_bin" "$site" "$src" "$build"
