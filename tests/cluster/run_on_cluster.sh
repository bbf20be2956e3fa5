#!/usr/bin/env bash
# Runs one MPI job on a fresh network-namespace cluster (netns_cluster.sh) and
# judges it by the verdict line the job prints before MPI_Finalize:
#
#   run_on_cluster.sh [--rate RATE] [--grace S] [--expect REGEX]... [--min-bytes N]
#                     PPN VERDICT_REGEX PROGRAM ARGS...
#
# PPN is ranks per host ("2,2", "2,1"; the number of entries is the number of
# hosts). Exit 0 when the job printed a line matching VERDICT_REGEX and either
# exited 0 or was still in MPI_Finalize GRACE seconds (default 10) later, its
# output matches every --expect, and at least N bytes (default 1) crossed the
# host links; 1 otherwise; 77 when the cluster cannot be made here.
#
# Why a verdict and a grace period: MPICH 4.0.2 (Debian 12) hangs in
# MPI_Finalize in about half of the runs once 3 or more processes talk over
# UCX's TCP transport (docs/known-issues.md). A job still in finalize after a
# passing verdict has done its work; the harness ends it and says so.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rate="" grace=10 limit=${CLUSTER_JOB_TIMEOUT:-240} min_bytes=1 expects=()
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --grace) grace=$2; shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --min-bytes) min_bytes=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] || { echo "usage: $0 [--rate RATE] [--grace S] PPN VERDICT_REGEX PROGRAM ARGS..." >&2; exit 2; }
ppn=$1 verdict=$2
shift 2
IFS=, read -r -a counts <<<"$ppn"

source "$here/netns_cluster.sh"
cluster_up "${#counts[@]}" "$rate" || { echo "SKIP: $cluster_skip"; exit 77; }
log=$cluster_dir/job.log
before=$(cluster_link_bytes)
start=$(date +%s.%N)
# A process group of its own (job control), so that the harness can end
# mpiexec and everything it started, not only the subshell that runs it.
set -m
cluster_mpiexec "$ppn" "$@" >"$log" 2>&1 &
job=$!
set +m

# Wait for the job to end, or for its verdict plus the grace period.
outcome="" seen_at=""
while :; do
  now=$(date +%s.%N)
  if ! kill -0 "$job" 2>/dev/null; then
    wait "$job"
    rc=$?
    outcome="exited with status $rc"
    break
  fi
  if [ -z "$seen_at" ] && grep -qE -- "$verdict" "$log"; then seen_at=$now; fi
  if [ -n "$seen_at" ] && awk -v a="$now" -v b="$seen_at" -v g="$grace" 'BEGIN{exit !(a-b>g)}'; then
    rc=hung
    outcome="still in MPI_Finalize ${grace} s after its verdict: ended by the harness"
    break
  fi
  if awk -v a="$now" -v b="$start" -v l="$limit" 'BEGIN{exit !(a-b>l)}'; then
    rc=timeout
    outcome="no verdict after ${limit} s: ended by the harness"
    break
  fi
  sleep 0.2
done
if [ "$rc" = hung ] || [ "$rc" = timeout ]; then
  kill -TERM -- -"$job" 2>/dev/null
  sleep 1
  kill -KILL -- -"$job" 2>/dev/null
  wait "$job" 2>/dev/null
fi
crossed=$(( $(cluster_link_bytes) - before ))

cat "$log"
echo "----"
echo "cluster: ${#counts[@]} hosts, ranks per host $ppn${rate:+, links limited to $rate}; $crossed bytes crossed the host links"
echo "job: $outcome"
problems=()
grep -qE -- "$verdict" "$log" || problems+=("no verdict matching /$verdict/")
[ "$rc" = 0 ] || [ "$rc" = hung ] || problems+=("the job $outcome")
for e in "${expects[@]}"; do
  grep -qE -- "$e" "$log" || problems+=("output lacks /$e/")
done
[ "$crossed" -ge "$min_bytes" ] ||
  problems+=("only $crossed bytes crossed the host links, expected at least $min_bytes")
if [ ${#problems[@]} -eq 0 ]; then
  [ "$rc" = hung ] && echo "finalize: hung (a known MPICH 4.0.2 defect over TCP); verdict counted"
  echo "RESULT: PASS"
  exit 0
fi
printf 'RESULT: FAIL: %s\n' "${problems[@]}"
exit 1
