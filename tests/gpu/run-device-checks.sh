#!/usr/bin/env bash
# Builds pgstrategy with CUDA and runs the GPU tests (CTest label "gpu") on a
# machine with a GPU. Usage, from anywhere:
#   tests/gpu/run-device-checks.sh [build-dir]      (default: build-gpu in the checkout)
# Exits non-zero when a test fails, or when the one-rank test was skipped: on a
# machine with a GPU that means the GPU is not usable (driver, CUDA_VISIBLE_DEVICES).
# Two-rank tests need two GPUs and are skipped (not failed) on a one-GPU machine.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$src/build-gpu}"
jobs="$(nproc 2>/dev/null || echo 4)"

if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L || true; fi

mkdir -p "$build"
cmake -S "$src" -B "$build" -DPGS_ENABLE_CUDA=ON -DPGS_ENABLE_FORTRAN=OFF -DPGS_ENABLE_GLOO=OFF \
      -DPGS_ENABLE_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" --target test_nccl

log="$build/gpu-tests.log"
status=0
(cd "$build" && ctest -L gpu --output-on-failure --timeout 300) 2>&1 | tee "$log" || status=$?
if grep -Eq 'test_nccl\.np1 .*Skipped' "$log"; then
  echo "run-device-checks: the one-rank GPU test was skipped: no usable GPU on this machine" >&2
  (cd "$build" && ctest -R 'test_nccl\.np1' -V 2>&1 | grep -i 'skipped:' >&2) || true
  [ "$status" -ne 0 ] || status=2
fi
exit "$status"
