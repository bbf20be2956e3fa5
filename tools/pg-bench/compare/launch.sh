#!/usr/bin/env bash
# The bootstrap against mpiexec (docs/launch.md, docs/performance.md):
#
# 1. Time from process start to the first completed allreduce of a torch
#    script (tests/launch/torch_job.py --time: import torch and pgstrategy_torch,
#    init_process_group("pgstrategy"), one allreduce), N = 2, 3, 4, under
#    torchrun (MPI brought up by the library through torch's Store) and under
#    mpiexec (MPI brought up by Hydra; mpi_env() gives torch the ranks), side by
#    side: the slowest rank's time, median of RUNS jobs each.
# 2. pg-bench's allreduce rows over the mpi and fairring backends, 2 ranks,
#    started as plain copies (the bootstrap) and under mpiexec, side by side.
#
#   tools/pg-bench/compare/launch.sh BUILD_DIR [PYTHON]
#
# RUNS (default 5) jobs per cell of part 1. Prints two tables.
set -euo pipefail
build=$(cd "$1" && pwd)
python=${2:-$build/../.venv-torch/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
runs=${RUNS:-5}
job=$root/tests/launch/torch_job.py
export PYTHONPATH=$build/python OMP_NUM_THREADS=1
# held_port: a port for plain copies' rendezvous, held until rank 0 listens on it.
. "$root/tests/common/held_port.sh"
# The slowest rank's "first allreduce done T s after the process started (U s
# after torch was imported)": "T U".
slowest() {
  grep -o "done [0-9.]* s after the process started ([0-9.]* s" |
    awk '{ gsub(/\(/, "", $8); if ($2 > t) t = $2; if ($8 > u) u = $8 } END { printf "%.2f/%.2f", t, u }'
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "== first allreduce, slowest rank, median of $runs jobs: seconds after the process started, and after torch was imported"
printf '%4s %12s %12s %8s   %12s %12s %8s\n' N torchrun mpiexec ratio torchrun mpiexec ratio
for n in 2 3 4; do
  t_torchrun="" t_mpiexec=""
  for ((i = 0; i < runs; ++i)); do  # alternating, so that the machine's load falls on both alike
    # torchrun's store and mpi_env's (under mpiexec) each listen on a port the system gives them.
    t_torchrun+=" $("$python" -m torch.distributed.run --nproc-per-node "$n" "$job" --time 2>/dev/null | slowest)"
    t_mpiexec+=" $(mpiexec -n "$n" "$python" "$job" --time 2>/dev/null | slowest)"
  done
  a=$(tr ' ' '\n' <<<"$t_torchrun" | cut -d/ -f1 | median) b=$(tr ' ' '\n' <<<"$t_mpiexec" | cut -d/ -f1 | median)
  c=$(tr ' ' '\n' <<<"$t_torchrun" | cut -d/ -f2 | median) d=$(tr ' ' '\n' <<<"$t_mpiexec" | cut -d/ -f2 | median)
  printf '%4d %10s s %10s s %7.2fx   %10s s %10s s %7.2fx\n' "$n" "$a" "$b" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')" "$c" "$d" "$(awk -v a="$c" -v b="$d" 'BEGIN { print a / b }')"
done

echo
echo "== pg-bench allreduce, 2 ranks: plain copies (the bootstrap) and mpiexec"
bench=$build/tools/pg-bench/pg-bench
args=(-b 8 -e 64M -f 8 -n 20 -w 5 -B mpi,fairring)
port=$(held_port)
RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$bench" "${args[@]}" >/dev/null &
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$bench" "${args[@]}" >"$build/launch-copies.txt"
wait
mpiexec -n 2 "$bench" "${args[@]}" >"$build/launch-mpiexec.txt"
echo "-- plain copies"
grep -E "^ *[0-9]|size" "$build/launch-copies.txt"
echo "-- mpiexec"
grep -E "^ *[0-9]|size" "$build/launch-mpiexec.txt"
