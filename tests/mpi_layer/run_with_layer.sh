#!/usr/bin/env bash
# run_with_layer.sh PGS_MPI [--passed REASON]... -- LAUNCH...
# Runs LAUNCH (an mpiexec command line whose program is wrapped in PGS_MPI)
# with the layer's summary on, and passes when the job passes, the summary
# shows routed calls (a layer that routes nothing proves nothing), and each
# REASON appears among the reasons calls went to MPI.
set -uo pipefail
pgs_mpi=$1
shift
reasons=()
while [ "$1" != "--" ]; do
  [ "$1" = "--passed" ] || { echo "run_with_layer.sh: unknown option $1" >&2; exit 2; }
  reasons+=("$2")
  shift 2
done
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
PGS_MPI_SUMMARY=1 PGS_MPI="$pgs_mpi" "$@" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || { echo "FAIL: the job exited with $rc"; exit 1; }
routed=$(sed -n 's/^pgs-mpi summary: routed \([0-9]*\) calls.*/\1/p' "$log")
[ -n "$routed" ] || { echo "FAIL: no summary from the layer (was it loaded?)"; exit 1; }
[ "$routed" -gt 0 ] || { echo "FAIL: the layer routed no call"; exit 1; }
for reason in "${reasons[@]}"; do
  grep -E "^  MPI_[A-Za-z_]+ .*[0-9]  .*\b$reason [0-9]+" "$log" >/dev/null ||
    { echo "FAIL: no call went to MPI for the reason '$reason'"; exit 1; }
done
echo "PASS: $routed calls routed"
