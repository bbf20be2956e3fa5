#!/bin/sh
# expect_abort.sh <pattern> <output-dir> <launcher and its arguments...> -- <program>
#
# Runs an MPI job that must abort after printing a message, and passes when the
# job failed and some rank wrote <pattern> (an extended regular expression) to
# its stderr (an empty <pattern>: no message is expected). Each rank's stderr goes to its own file in <output-dir>, because a
# launcher killing an aborted job may drop output still in its pipes.
set -u
if [ "$1" = "--rank" ]; then   # inside the job: one rank, stderr to its file
  dir=$2
  shift 2
  exec "$@" 2>"$dir/rank.${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-$$}}.err"
fi
pattern=$1
dir=$2
shift 2
mkdir -p "$dir"
rm -f "$dir"/rank.*.err
for arg do   # rebuild the command line with "$0 --rank <dir>" in place of "--"
  shift
  if [ "$arg" = "--" ]; then set -- "$@" "$0" --rank "$dir"; else set -- "$@" "$arg"; fi
done
"$@"
status=$?
cat "$dir"/rank.*.err 2>/dev/null
if [ "$status" -eq 0 ]; then
  echo "expect_abort: the job exited with status 0; it should have aborted"
  exit 1
fi
if [ -n "$pattern" ] && ! grep -Eq "$pattern" "$dir"/rank.*.err 2>/dev/null; then
  echo "expect_abort: no rank printed '$pattern'"
  exit 1
fi
echo "expect_abort: the job aborted (status $status) after the expected message"
