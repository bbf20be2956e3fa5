#!/usr/bin/env bash
# Two revisions of pgstrategy side by side: builds pg-bench at each and runs
# the same sweep with them alternated (A B B A A B ...), then prints, per row,
# each revision's median over the jobs with its spread and the ratio B/A (per
# pair of neighbouring jobs, median and min-max).
#
#   tools/pg-bench/compare/ab.sh [-j JOBS] [-n RANKS] [--load N] REV_A REV_B [-- PG-BENCH ARGS]
#
# REV: anything git names (a commit, a branch, HEAD~3), or "." for the working
# tree as it is. JOBS: jobs per revision (default 5); RANKS: ranks per job
# (default 2); --load N: N CPU-bound processes beside rank 0 (pg-bench --load,
# which both revisions must have).
# PG-BENCH ARGS default to an allreduce sweep of fairring and mpi-raw from 8 B
# to 64 MiB (-c 0). Builds and results in tools/pg-bench/compare/.ab/ (ignored by git).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
jobs=5 ranks=2 load=()
while [ $# -gt 0 ]; do
  case $1 in
    -j) jobs=$2; shift 2 ;;
    -n) ranks=$2; shift 2 ;;
    --load) load=(--load "$2"); shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
revs=("$1" "$2")
shift 2
[ "${1:-}" = -- ] && shift
sweep=("$@")
[ ${#sweep[@]} -gt 0 ] || sweep=(-b 8 -e 64M -f 8 -n 20 -w 3 -c 0 -B fairring,mpi-raw)

work=$here/.ab
mkdir -p "$work"
# build <rev> <label>: pg-bench of that revision in $work/<label>; prints its path.
build() {
  local rev=$1 label=$2
  local src=$work/$label-src
  if [ "$rev" = . ]; then
    # A copy of the tree's files (times kept, so that a rebuild is
    # incremental) at a path as long as a revision's: built from the tree
    # itself, the same code measured 1.09-1.17 times a revision's at 128-512 B
    # (a different path, a different layout of the library).
    rm -rf "$src"
    mkdir -p "$src"
    # (A file deleted but not yet from git's index is listed, and skipped.)
    (cd "$root" && git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -c 2>/dev/null) |
      tar -x -C "$src"
  else
    local commit
    commit=$(git -C "$root" rev-parse --verify "$rev^{commit}")
    if [ "$(cat "$src/.commit" 2>/dev/null)" != "$commit" ]; then  # else its build is reused
      rm -rf "$src" "$work/$label"
      mkdir -p "$src"
      git -C "$root" archive "$commit" | tar -x -C "$src"
      echo "$commit" >"$src/.commit"
    fi
  fi
  cmake -S "$src" -B "$work/$label" -DCMAKE_BUILD_TYPE=Release -DPGS_ENABLE_CUDA=OFF >"$work/$label.log" 2>&1 &&
    cmake --build "$work/$label" -j"$(nproc)" --target pg-bench >>"$work/$label.log" 2>&1 ||
    { tail -30 "$work/$label.log" >&2; exit 1; }
  echo "$work/$label/tools/pg-bench/pg-bench"
}
# name <rev>: the revision as the table names it.
name() { if [ "$1" = . ]; then echo "the working tree"; else echo "$1 ($(git -C "$root" rev-parse --short "$1"))"; fi; }
echo "== building A = $(name "${revs[0]}") and B = $(name "${revs[1]}")" >&2
bench_a=$(build "${revs[0]}" a)
bench_b=$(build "${revs[1]}" b)

rm -f "$work"/run-*.csv
# A B, B A, A B, ...: whichever runs second in a pair ran 1.02-1.08 times slower
# at 128-512 B (the same revision on both sides, seven jobs, always A first).
for ((i = 0; i < jobs; ++i)); do
  order="a b"
  ((i % 2)) && order="b a"
  for side in $order; do
    bench=bench_$side
    echo "== job $((i + 1))/$jobs: $side" >&2
    mpiexec -n "$ranks" "${!bench}" "${sweep[@]}" "${load[@]}" --csv "$work/run-$side-$i.csv" >/dev/null
  done
done
echo "# A = $(name "${revs[0]}"), B = $(name "${revs[1]}"): $jobs jobs each, alternated, $ranks ranks${load:+, ${load[*]}}"
echo "# pg-bench ${sweep[*]}"
python3 "$here/ab_table.py" "$work" "$jobs"
