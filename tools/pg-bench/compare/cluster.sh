#!/usr/bin/env bash
# fairring against MPICH's allreduce across hosts that are really separate:
# 2 network-namespace hosts x 2 ranks (tests/cluster/netns_cluster.sh), each
# host link rate-limited, every inter-host byte over TCP. As root.
#
#   tools/pg-bench/compare/cluster.sh [BUILD_DIR] [REPS] [RATE...]   (defaults: build, 5, 1gbit 250mbit)
#
# For each link rate, pg-bench runs allreduce float32 with fairring and
# mpi-raw interleaved (MPICH's automatic choice), then again with MPICH's own
# SMP-aware allreduce (MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=smp: reduce to a
# leader per node, allreduce among leaders, broadcast in the node). A third
# pass counts the bytes one allreduce of each sends over the host links, for
# the model in docs/algorithms.md. BUILD_DIR is relative to the repository
# root. Results in tools/pg-bench/compare/.cluster/ (ignored by git), a table
# at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
build=$(realpath "${1:-build}")
reps=${2:-5}
shift $(($# < 2 ? $# : 2))
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(1gbit 250mbit)
pgbench=$build/tools/pg-bench/pg-bench
[ -x "$pgbench" ] || { echo "no $pgbench: build first (scripts/setup.sh)" >&2; exit 1; }
out=$here/.cluster
mkdir -p "$out"
run=tests/cluster/run_on_cluster.sh
verdict="# Wrong values: 0 OK"
exec > >(tee "$out/summary-$(IFS=-; echo "${rates[*]}").txt")

# Above ~1 Gbit/s the two cores, not the link, are the limit here; at 250 Mbit/s
# sizes stop at 64 MiB (a 256 MiB call takes ~10 s).
for rate in "${rates[@]}"; do
  min=16M max=256M
  [ "$rate" = 250mbit ] && max=64M
  for mpich in auto smp; do
    csv=$out/allreduce-$rate-$mpich.csv
    echo "== $rate, MPICH allreduce $mpich"
    env MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=$mpich CLUSTER_JOB_TIMEOUT=3000 \
      $run --rate "$rate" --grace 20 2,2 "$verdict" \
      "$pgbench" -b "$min" -e "$max" -f 4 -n 3 -w 1 -r "$reps" -B fairring,mpi-raw --csv "$csv" |
      grep -E '^ *[0-9]+ |^# |^job|^cluster|RESULT'
  done
done
# Bytes on the links per allreduce, the same at any rate: one 64 MiB call of
# each out of place and one in place (pg-bench's two placements), unlimited.
for algorithm in "fairring auto" "mpi-raw auto" "mpi-raw smp"; do
  read -r backend mpich <<<"$algorithm"
  line=$(env MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=$mpich $run --grace 20 2,2 "$verdict" \
    "$pgbench" -b 64M -e 64M -n 1 -w 0 -B "$backend" | grep '^cluster:')
  echo "bytes for 2 calls of 64 MiB, $backend, MPICH allreduce $mpich: ${line#*; }"
done

