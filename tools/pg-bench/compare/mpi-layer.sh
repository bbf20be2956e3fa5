#!/usr/bin/env bash
# The MPI layer against MPI itself, side by side: allreduce_loop.c (a plain
# MPI_Allreduce loop, float32 sum) built with the build's own mpicc, run
# plain, under pgs-mpi (fairring), and under pgs-mpi with PGS_BACKEND=mpi
# (every call passes through the layer to MPI: the layer's own cost), the
# three alternated in each of JOBS rounds. Prints, per size, the median time
# per call of each (median over rounds) and the ratio plain / layer as
# median [min-max] over rounds (> 1: the layer is faster); then what the layer
# itself adds to a passed and to a routed 8-byte allreduce (layer_overhead.c,
# inside one process: the build's target layer_overhead).
#
#   tools/pg-bench/compare/mpi-layer.sh [BUILD_DIR=build] [JOBS=5] [RANKS=2]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
jobs=${2:-5}
ranks=${3:-2}
cache=$build/CMakeCache.txt
mpicc=$(sed -n 's/^MPI_C_COMPILER:[A-Z]*=//p' "$cache")
mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$cache")
pgs_mpi=$build/bindings/mpi/pgs-mpi
overhead=$build/tools/pg-bench/layer_overhead
[ -x "$pgs_mpi" ] && [ -x "$overhead" ] ||
  { echo "no $pgs_mpi or $overhead: build the targets pgstrategy_mpi and layer_overhead first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$mpicc" -O2 "$here/allreduce_loop.c" -o "$work/loop"
extra=()
if "$mpiexec" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then
  extra=(--oversubscribe --bind-to none)
  [ "$(id -u)" -ne 0 ] || extra+=(--allow-run-as-root)
fi

run() {  # run <label> <env...> : both size ranges, rows "label bytes oop_us ip_us"
  local label=$1
  shift
  for range in "2000 5 8 262144 8" "5 5 1048576 268435456 4"; do
    env "$@" "$mpiexec" -n "$ranks" "${extra[@]}" $wrap "$work/loop" $range | grep -v '^#' |
      awk -v l="$label" '{print l, $1, $2, $3}'
  done
}
for j in $(seq "$jobs"); do
  wrap="" run plain PGS_MPI_SUMMARY=0
  wrap=$pgs_mpi run layer PGS_MPI_SUMMARY=0
  wrap=$pgs_mpi run pass PGS_MPI_SUMMARY=0 PGS_BACKEND=mpi
done >"$work/rows"
python3 - "$work/rows" "$jobs" "$ranks" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, size, oop, ip = line.split()
    rows[(label, int(size))].append((float(oop), float(ip)))
print(f"# MPI_Allreduce float32, {sys.argv[3]} ranks, {sys.argv[2]} rounds; time per call (us), medians over rounds")
print("# ratio = plain / layer per round: median [min-max]  (> 1: the layer is faster)")
print(f"{'bytes':>10} {'place':>8} {'plain':>9} {'layer':>9} {'mpi via layer':>13}  {'plain/layer':>22}  {'plain/(mpi via layer)':>22}")
def spread(a, b):
    r = sorted(x / y for x, y in zip(a, b))
    return f"{statistics.median(r):.2f} [{r[0]:.2f}-{r[-1]:.2f}]"
for size in sorted({s for _, s in rows}):
    for k, place in ((0, "oop"), (1, "in place")):
        p, l, m = ([t[k] for t in rows[(lab, size)]] for lab in ("plain", "layer", "pass"))
        print(f"{size:>10} {place:>8} {statistics.median(p):9.2f} {statistics.median(l):9.2f} {statistics.median(m):13.2f}  {spread(p, l):>22}  {spread(p, m):>22}")
PY
"$mpiexec" -n "$ranks" "${extra[@]}" "$pgs_mpi" "$overhead" 20000 "$jobs"
