#!/bin/sh
# fault_run.sh <max-seconds> <pattern or -> <output-dir> <launcher and its arguments...> -- <program>
#
# Runs an MPI job that a fault must end (a killed or stopped rank), through
# expect_abort.sh, and passes when the job failed, within <max-seconds> of the
# fault, after some rank printed <pattern> ("-": no message expected). The
# faulting rank prints "fault at <seconds since the epoch>" to its stderr just
# before; without that line the clock starts with the job (whose start-up
# alone may take seconds on a busy machine). Prints how long the end took.
set -u
max=$1
pattern=$2
shift 2
dir=$1
[ "$pattern" = "-" ] && pattern=""
start=$(date +%s.%N)
sh "$(dirname "$0")/expect_abort.sh" "$pattern" "$@"
status=$?
end=$(date +%s.%N)
fault=$(sed -n 's/^fault at \([0-9.]*\)$/\1/p' "$dir"/rank.*.err 2>/dev/null | head -n 1)
[ -n "$fault" ] && start=$fault
took=$(awk "BEGIN { print $end - $start }")
echo "fault_run: the job ended $took s after the fault (limit $max s)"
[ "$status" -eq 0 ] || exit 1
awk "BEGIN { exit !($took <= $max) }" || { echo "fault_run: too slow"; exit 1; }
