#!/usr/bin/env bash
# Two ranks the scheduler has put on one core. pg-bench starts unbound on a
# 2-CPU machine, so every create sees 2 ranks on 2 CPUs and the wait rule
# spins first; once the backends are created, both ranks are moved onto CPU 0
# and a busy process takes CPU 1, as when a third runnable process (a data
# loader, a daemon) leaves two unbound ranks sharing a core. The ranks sleep
# between their creates and the sweep (pg-bench --pause) while they are
# moved, so every row is measured after the move.
#
#   tools/pg-bench/compare/shared_core.sh [PG-BENCH ARGS]
#
# PG-BENCH ARGS default to -b 8 -e 2M -f 8 -n 20 -w 2 -r 15 -c 0 -B fairring,mpi-raw.
# Needs taskset and CPUs 0 and 1. PG_BENCH names the binary (default: build/'s),
# MPIEXEC the launcher with its flags (default: mpiexec).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
bench=${PG_BENCH:-$root/build/tools/pg-bench/pg-bench}
[ $# -gt 0 ] || set -- -b 8 -e 2M -f 8 -n 20 -w 2 -r 15 -c 0 -B fairring,mpi-raw
command -v taskset >/dev/null || { echo "shared_core.sh: needs taskset (util-linux)" >&2; exit 2; }
taskset -c 0,1 true 2>/dev/null || { echo "shared_core.sh: needs CPUs 0 and 1 (taskset -c 0,1 failed)" >&2; exit 2; }
out=$(mktemp)
busy= job=
# Whatever ends the script (a signal too) takes its job and busy loop with it.
trap 'rm -f "$out"; kill $job $busy 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
# shellcheck disable=SC2086 # MPIEXEC is a command with its flags
${MPIEXEC:-mpiexec} -n 2 "$bench" --pause 1000 "$@" >"$out" 2>&1 &
job=$!
# The launcher's processes and the ranks under it (no other job's).
descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}
# The backend lines come after every create; the ranks then sleep (--pause)
# while they are moved: on a fast machine the whole sweep takes a few tens of
# milliseconds, less than finding and moving them.
until grep -q '^# backend' "$out" || ! kill -0 "$job" 2>/dev/null; do sleep 0.01; done
for pid in $job $(descendants "$job"); do taskset -apc 0 "$pid" >/dev/null 2>&1 || true; done
taskset -c 1 sh -c 'while :; do :; done' &
busy=$!
moved="# ranks moved onto CPU 0, a busy loop on CPU 1, while the job ran"
kill -0 "$job" 2>/dev/null || moved="# the job ended before its ranks were moved: give it more repetitions"
status=0
wait "$job" || status=$?
cat "$out"
[ "$status" -ne 0 ] || echo "$moved"  # a failed job says why itself
exit "$status"
