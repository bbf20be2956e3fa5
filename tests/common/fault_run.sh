#!/bin/sh
# fault_run.sh <max-seconds> <pattern or -> <output-dir> <launcher and its arguments...> -- <program>
#
# Runs an MPI job that a fault must end (a killed or stopped rank), through
# expect_abort.sh, and passes when the job failed, within <max-seconds> of its
# start, after some rank printed <pattern> ("-": no message expected). Prints
# how long the job took.
set -u
max=$1
pattern=$2
shift 2
[ "$pattern" = "-" ] && pattern=""
start=$(date +%s.%N)
sh "$(dirname "$0")/expect_abort.sh" "$pattern" "$@"
status=$?
end=$(date +%s.%N)
took=$(awk "BEGIN { print $end - $start }")
echo "fault_run: the job ended after $took s (limit $max s)"
[ "$status" -eq 0 ] || exit 1
awk "BEGIN { exit !($took <= $max) }" || { echo "fault_run: too slow"; exit 1; }
