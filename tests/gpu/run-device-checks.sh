#!/usr/bin/env bash
# The device check: builds pgstrategy with CUDA on a GPU machine, runs the GPU
# tests and the GPU timings, and prints a short table last.
#
#   tests/gpu/run-device-checks.sh [build-dir]     (default: build-gpu in the checkout)
#
# Self-sufficient on a machine with CUDA (nvcc), NCCL (the nvidia-nccl-cu13
# Python package, or NCCL next to CUDA), CMake, ninja and Python, and no MPI,
# no hwloc, no network: the MPI (Debian's MPICH), hwloc, OpenSSL's libcrypto,
# pkg-config and GoogleTest it builds against come from tests/gpu/.carry, which
# tests/gpu/prepare-device-carry.sh makes on a Debian machine and the device
# call carries. Without that folder, the machine's own are used.
#
# Steps (about 5 minutes on 16 cores, by estimate: no GPU run yet):
#  1. configure and build (ninja) what the checks run;
#  2. `ctest -L gpu`: the nccl backend on one rank, every collective x dtype x
#     op against references computed on the CPU (exact values and random
#     data; tests/gpu/test_nccl.cpp, tests/mpi/test_collectives.cpp "cuda");
#     fairring on CUDA on one rank, on 2 virtual nodes of one rank sharing the
#     GPU (PGS_RANKS_PER_NODE=1) and on 2 virtual nodes of 2 ranks; nccl on 2
#     ranks sharing the GPU. Ranks that share one GPU are told to be NCCL
#     hosts of their own (NCCL_HOSTID), since NCCL refuses two ranks of one
#     host on one GPU; their NCCL then talks over its network transport;
#  3. pg-bench: pg_allreduce through nccl against ncclAllReduce at 8 B (the
#     per-call overhead; goal <= 2 us) and from 1 MiB to 1 GiB on one rank;
#     fairring's pipeline staged through pinned host memory on 2 virtual
#     nodes sharing the GPU against the pinned host<->device copy ceiling
#     (memcpy-pinned; goal >= 0.8) and MPI alone on host memory (mpi-raw);
#     and fairring on CPU at 2, 4, 8 and 16 ranks on the node against
#     mpi-raw, 8 B to 16 MiB (the scaling sweep: no GPU needed);
#  4. the table (tests/gpu/device_table.py), from the test results and CSVs.
#
# Every step has a time limit, and the whole run a deadline
# (PGS_DEVICE_CHECK_SECONDS, default 540 s, under the device call's 10 minutes):
# a step that would pass it is cut short or skipped, so the table always comes.
#
# Exit status: 0 when everything ran and passed; 1 when a build step, a test
# or a timing run failed or was cut short; 2 when there is no usable GPU (the
# GPU tests were skipped). With PGS_DEVICE_CHECK_REHEARSAL=1 (a machine without a GPU, to
# rehearse everything else) a run whose GPU tests all skipped exits 0.
# Logs and CSVs are left in the build folder, and copied to $OUT when set.
set -uo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$src/build-gpu}"
carry="$src/tests/gpu/.carry/root/usr"
jobs="$(nproc 2>/dev/null || echo 4)"
rehearsal="${PGS_DEVICE_CHECK_REHEARSAL:-0}"
deadline="${PGS_DEVICE_CHECK_SECONDS:-540}"
mkdir -p "$build"
log="$build/device-check.log"
: >"$log"
status=0
say() { echo "run-device-checks: $*" | tee -a "$log"; }
# step <name> <seconds> <command...>: runs it under a time limit (cut to what
# is left before the deadline, keeping 30 s for the table), its output to the log.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((deadline - SECONDS - 30))
  [ "$limit" -le "$left" ] || limit=$left
  if [ "$limit" -lt 10 ]; then
    say "$name: skipped, no time left before the deadline"
    return 124
  fi
  local start=$SECONDS
  say "$name (at most $limit s) ..."
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  say "$name: exit $rc after $((SECONDS - start)) s"
  return $rc
}
finish() {
  if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
    cp "$log" "$build"/*.csv "$build/gpu-tests.log" "$OUT/" 2>/dev/null || true
  fi
  exit "$status"
}

# UCX's memory hooks (under the carried MPICH) stay out of CUDA's allocations;
# NCCL's warnings go to the log, for the table's failures.
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no NCCL_DEBUG="${NCCL_DEBUG:-WARN}"

# --- what the build uses ------------------------------------------------------
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPGS_ENABLE_CUDA=ON -DPGS_ENABLE_FORTRAN=OFF
            -DPGS_ENABLE_GLOO=OFF -DPGS_ENABLE_TESTS=ON)
if [ -d "$carry" ]; then
  lib="$carry/lib/x86_64-linux-gnu"
  export PATH="$carry/bin:$PATH"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Only the carried .pc files: a system hwloc cannot slip in.
  export PKG_CONFIG_LIBDIR="$lib/pkgconfig:$carry/share/pkgconfig"
  unset PKG_CONFIG_PATH
  cmake_args+=(-DPKG_CONFIG_EXECUTABLE="$carry/bin/pkg-config" -DMPI_C_COMPILER="$carry/bin/mpicc"
               -DMPIEXEC_EXECUTABLE="$carry/bin/mpiexec" -DGTest_DIR="$lib/cmake/GTest"
               -DOPENSSL_ROOT_DIR="$carry")
  say "MPI, hwloc, libcrypto, pkg-config, GoogleTest: carried ($carry)"
else
  say "no tests/gpu/.carry: the machine's own MPI, hwloc, libcrypto, pkg-config and GoogleTest"
fi
# NCCL from its Python package, wherever the package puts its files.
nccl="$(python3 - <<'EOF' 2>/dev/null
import importlib.metadata as md, os
for name in ("nvidia-nccl-cu13", "nvidia-nccl-cu12"):
    try:
        files = md.files(name) or []
    except md.PackageNotFoundError:
        continue
    header = [f for f in files if f.name == "nccl.h"]
    library = [f for f in files if f.name.startswith("libnccl.so")]
    if header and library:
        print(os.path.dirname(header[0].locate()), library[0].locate(), name, md.version(name))
        break
EOF
)"
if [ -n "$nccl" ]; then
  read -r nccl_include nccl_library nccl_package nccl_version <<<"$nccl"
  cmake_args+=(-DNCCL_INCLUDE_DIR="$nccl_include" -DNCCL_LIBRARY="$nccl_library")
  export LD_LIBRARY_PATH="$(dirname "$nccl_library"):${LD_LIBRARY_PATH:-}"
  say "NCCL: Python package $nccl_package $nccl_version ($nccl_library)"
else
  say "NCCL: no Python package; CMake looks next to the CUDA toolkit"
fi
command -v nvcc >/dev/null && say "CUDA: $(nvcc --version | tail -1)"
gpu="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "GPU: ${gpu:-none visible to nvidia-smi}"

# --- 1. build -----------------------------------------------------------------
# No device code of its own (NCCL and the CUDA runtime API only), so nothing
# is compiled for sm_90 here; NCCL's kernels come built for it.
step configure 180 cmake -S "$src" -B "$build" "${cmake_args[@]}" || { status=1; tail -40 "$log"; finish; }
grep -E "^-- pgstrategy" "$log" | tail -1
step build 420 cmake --build "$build" -j "$jobs" --target test_nccl test_collectives pg-bench ||
  { status=1; tail -40 "$log"; finish; }

# --- 2. tests -----------------------------------------------------------------
# The tests of one rank and of fairring's transport first; then those whose
# ranks share the GPU through NCCL's network transport (slower: they time-slice it).
tests_log="$build/gpu-tests.log"
: >"$tests_log"
sharing='cuda_nccl_shared|cuda_fairring_2x1_mem_alloc|cuda_fairring_2x2'
log_saved="$log"
log="$tests_log"
step "ctest -L gpu" 240 ctest --test-dir "$build" -L gpu -E "$sharing" --output-on-failure
tests_rc=$?
step "ctest -L gpu (more ranks sharing the GPU)" 150 ctest --test-dir "$build" -L gpu -R "$sharing" --output-on-failure ||
  tests_rc=1
log="$log_saved"
cat "$tests_log" >>"$log"
gpu_ok=1
grep -Eq 'test_nccl\.np1 .*Skipped' "$tests_log" && gpu_ok=0
if [ "$gpu_ok" = 0 ]; then
  why="$(cd "$build" && ctest -R '^test_nccl\.np1$' -V 2>&1 | grep -m1 -i 'skipped:' || true)"
  say "the one-rank GPU test was skipped: no usable GPU (${why#*skipped: })"
  if grep -Eq '(Failed|Timeout|Not Run)' "$tests_log" || ! grep -q 'tests passed' "$tests_log"; then status=1; fi
  [ "$status" = 0 ] && { [ "$rehearsal" = 1 ] || status=2; }
else
  [ "$tests_rc" = 0 ] || status=1
fi

# --- 3. timings -----------------------------------------------------------------
# Without a GPU the same runs, up to 4 MiB: the GPU backends are skipped, and
# what remains (mpi-raw, the launch lines) is rehearsed.
bench="$build/tools/pg-bench/pg-bench"
largest=1G
[ "$gpu_ok" = 1 ] || { largest=4M; say "no usable GPU: the timings run up to $largest, without their GPU backends"; }
rm -f "$build"/overhead.csv "$build"/bandwidth.csv "$build"/staged.csv
step "pg-bench: per-call overhead at 8 B (1 rank)" 90 mpiexec -n 1 "$bench" --device cuda -B nccl,nccl-raw \
  -b 8 -e 8 -n 2000 -w 200 -r 3 --csv "$build/overhead.csv" || status=1
# Two ranks sharing the GPU as 2 virtual nodes: each its own NCCL host.
staged=(--device cuda -B fairring,memcpy-pinned,mpi-raw -b 1M -e "$largest" -f 4 -n 5 -w 2 --csv "$build/staged.csv")
step "pg-bench: fairring staged through the host (2 virtual nodes)" 200 \
  mpiexec -genv PGS_RANKS_PER_NODE 1 -genv PGS_FAIRRING_MIN_BYTES 0 \
    -n 1 -env NCCL_HOSTID pgstrategy-bench-0 "$bench" "${staged[@]}" : \
    -n 1 -env NCCL_HOSTID pgstrategy-bench-1 "$bench" "${staged[@]}" || status=1
step "pg-bench: 1 MiB to $largest (1 rank)" 150 mpiexec -n 1 "$bench" --device cuda -B nccl,nccl-raw,memcpy \
  -b 1M -e "$largest" -f 4 -n 10 -w 3 --csv "$build/bandwidth.csv" || status=1
# fairring on CPU as ranks per node grow, against MPI alone, on the lent
# machine's cores (a rank per core at most; each result checked).
rm -f "$build"/scaling-*.csv
for ranks in 2 4 8 16; do
  [ "$ranks" -le "$jobs" ] || break
  step "pg-bench: CPU scaling, $ranks ranks on one node" 60 mpiexec -n "$ranks" "$bench" -B fairring,mpi-raw \
    -b 8 -e 16M -f 8 -n 10 -w 2 -r 3 --csv "$build/scaling-$ranks.csv" || status=1
  last=$ranks
done
# Small messages up the tree at the largest count (PGS_FAIRRING_TREE_RANKS=2
# forces it), against the whole-input reads above: where the tree starts to pay.
[ -n "${last:-}" ] && step "pg-bench: CPU scaling, $last ranks, the tree forced" 60 \
  env PGS_FAIRRING_TREE_RANKS=2 mpiexec -n "$last" "$bench" -B fairring,mpi-raw -b 8 -e 2K -f 4 -n 10 -w 2 -r 3 \
  --csv "$build/scaling-tree-$last.csv" || status=1

# --- 4. the table ----------------------------------------------------------------
python3 "$src/tests/gpu/device_table.py" --tests "$tests_log" --gpu "${gpu:-none}" \
  "$build/overhead.csv" "$build/bandwidth.csv" "$build/staged.csv" "$build"/scaling-*.csv | tee -a "$log"
say "exit status $status"
finish
