#!/usr/bin/env bash
# fairring's small and mid-size allreduce against the MPIs a user could pick
# instead, on one node: Debian's MPICH 4.0.2 (the build's) and Intel MPI
# 2021.19 (PyPI impi-rt, shared memory only). allreduce float32, 8 B - 4 MiB,
# time per call, medians over repetitions, out of place and in place.
#
#   tools/pg-bench/compare/small-messages.sh [BUILD_DIR] [RANKS] [REPS]   (defaults: build, 2, 5)
#
# pg-bench, built against Debian's MPICH, runs under each MPI's own mpiexec
# (Intel MPI speaks the MPICH ABI: a libmpich.so.12 link to its libmpi.so.12),
# so its mpi-raw row is that MPI's MPI_Allreduce, measured in the same run as
# fairring and the mpi backend on top of it. The wheel is unpacked into
# tools/pg-bench/compare/.mpis (ignored by git; the first run downloads about
# 130 MB with pip). Results: .mpis/small/, a table at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
build=$(realpath "${1:-build}")
ranks=${2:-2}
reps=${3:-5}
work=$here/.mpis
out=$work/small
pgbench=$build/tools/pg-bench/pg-bench
[ -x "$pgbench" ] || { echo "no $pgbench: build first (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$work" "$out"

if [ ! -d "$work/impi" ]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$work/wheels" impi-rt==2021.19.0
  rm -rf "$work/impi.tmp" && mkdir -p "$work/impi.tmp"
  (cd "$work/impi.tmp" && python3 -m zipfile -e "$work"/wheels/impi_rt-*.whl .)
  mv "$work/impi.tmp"/impi_rt-*.data/data "$work/impi"
  rm -rf "$work/impi.tmp"
  chmod +x "$work/impi"/bin/*
  mkdir -p "$work/impi-abi"
  ln -sf "$work/impi/lib/libmpi.so.12" "$work/impi-abi/libmpich.so.12"
fi
impi_env=(env I_MPI_ROOT="$work/impi" I_MPI_FABRICS=shm LD_LIBRARY_PATH="$work/impi-abi:$work/impi/lib:${LD_LIBRARY_PATH:-}")

sweep=(-b 8 -e 4M -f 2 -n 200 -w 20 -r "$reps" -c 0 -B fairring,mpi,mpi-raw)
echo "== pg-bench on Debian's MPICH 4.0.2, $ranks ranks"
mpiexec -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/mpich4-np$ranks.csv" | grep -E '^ +[0-9]' || true
echo "== pg-bench on Intel MPI 2021.19, $ranks ranks"
"${impi_env[@]}" "$work/impi/bin/mpiexec" -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/impi-np$ranks.csv" |
  grep -E '^ +[0-9]' || true

echo "== summary: median time (us) per size, out of place / in place"
python3 - "$out" "$here/.." "$ranks" <<'PY'
import csv, statistics, sys
from collections import defaultdict
out, tools, ranks = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, tools)
from pg_bench_sizes import human_bytes
t = defaultdict(lambda: defaultdict(list))  # t[column][(bytes, in_place)] = times
for mpi, name in (("mpich4", "MPICH 4.0.2"), ("impi", "Intel MPI 2021.19")):
    with open(f"{out}/{mpi}-np{ranks}.csv", newline="") as f:
        for row in csv.DictReader(f):
            col = {"mpi-raw": name, "fairring": f"fairring ({name})", "mpi": f"mpi ({name})"}[row["backend"]]
            t[col][(int(row["bytes"]), int(row["in_place"]))].append(float(row["time_us"]))
med = {c: {k: statistics.median(v) for k, v in d.items()} for c, d in t.items()}
cols = ["fairring (MPICH 4.0.2)", "MPICH 4.0.2", "Intel MPI 2021.19"]
print("| bytes | fairring | Debian MPICH 4.0.2 | Intel MPI 2021.19 | fairring / Intel MPI | fairring / MPICH |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for b in sorted({k[0] for k in med["MPICH 4.0.2"]}):
    cell = lambda c: " / ".join(f"{med[c][(b, ip)]:.2f}" for ip in (0, 1))
    ratio = lambda c: " / ".join(f"{med[cols[0]][(b, ip)] / med[c][(b, ip)]:.2f}" for ip in (0, 1))
    print(f"| {human_bytes(b)} | {cell(cols[0])} | {cell(cols[1])} | {cell(cols[2])} | {ratio(cols[2])} | {ratio(cols[1])} |")
PY
