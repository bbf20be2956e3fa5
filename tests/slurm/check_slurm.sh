#!/usr/bin/env bash
# The library under a real Slurm: starts a private single-node cluster
# (private_slurm.sh), runs the examples and pg-topo as a user would, and checks
# what they print. Exit 0 when every check passes, 1 when one fails, 77 when
# Slurm cannot run here (the reason is printed).
#
#   check_slurm.sh --plugin pmi2 --demo allreduce_demo --topo pg-topo [--fortran heat1d]
#                  [--torch PYTHON]   (a Python with torch and pgstrategy_torch on its PYTHONPATH)
#                  [--layer PGS_MPI --plain-mpi cg_mpi]   (the MPI layer under srun)
#
# --plugin is the srun --mpi value the MPI library speaks (MPICH: pmi2, Open
# MPI: pmix).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
examples=$here/../../examples/slurm
plugin="" demo="" topo="" fortran="" torch_python="" pgs_mpi="" plain_mpi=""
while [ $# -gt 0 ]; do
  case $1 in
    --plugin) plugin=$2 ;;
    --demo) demo=$2 ;;
    --topo) topo=$2 ;;
    --fortran) fortran=$2 ;;
    --torch) torch_python=$2 ;;
    --layer) pgs_mpi=$2 ;;
    --plain-mpi) plain_mpi=$2 ;;
    *) echo "unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
[ -n "$plugin" ] && [ -x "$demo" ] && [ -x "$topo" ] || {
  echo "usage: $0 --plugin TYPE --demo EXE --topo EXE [--fortran EXE]" >&2; exit 2; }

source "$here/private_slurm.sh"
slurm_start
rc=$?
if [ $rc -ne 0 ]; then
  echo "SKIP: $slurm_skip"
  exit $rc
fi
out=$slurm_scratch/out
mkdir -p "$out"
failed=0
results=()

# check NAME COMMAND...: runs COMMAND (stdout and stderr to files); the
# expectations that follow read them through `stdout_has`, `stderr_has`, ...
check() {
  name=$1
  shift
  timeout 120 "$@" >"$out/$name.out" 2>"$out/$name.err"
  status=$?
}
has() { grep -q -- "$2" "$out/$name.$1"; }
lacks() { ! grep -q -- "$2" "$out/$name.$1"; }
verdict() {  # verdict EXPECTATION...: each "out PATTERN", "err PATTERN", "!err PATTERN"
  local ok=1 what file
  [ "$status" -eq 0 ] || { ok=0; echo "$name: exit status $status"; }
  while [ $# -gt 0 ]; do
    what=$1 pattern=$2
    shift 2
    case $what in
      out | err) has "$what" "$pattern" || { ok=0; echo "$name: missing in std$what: $pattern"; } ;;
      !out | !err) file=${what#!}
        lacks "$file" "$pattern" || { ok=0; echo "$name: unexpected in std$file: $pattern"; } ;;
    esac
  done
  if [ $ok -eq 1 ]; then
    results+=("PASS  $name")
  else
    failed=1
    results+=("FAIL  $name")
    for f in out err; do
      echo "---- $name std$f"
      tail -n 30 "$out/$name.$f"
    done
  fi
}

# verdict_fails EXPECTATION...: as verdict, for a command that must fail.
verdict_fails() {
  if [ "$status" -eq 0 ]; then
    status=1
    echo "$name: succeeded, but should have failed"
  else
    status=0
  fi
  verdict "$@"
}

# A step of 2 tasks: one MPI job of 2 ranks, no warning.
check srun_demo srun -n 2 --mpi="$plugin" "$demo"
verdict out "over 2 ranks" out "^OK" !err "warn"

# pg-topo in the step: 2 ranks on 1 node; Slurm's local rank and size agree
# with MPI's.
check srun_pg_topo srun -n 2 --mpi="$plugin" "$topo"
verdict out "pg-topo: 2 ranks" \
  out "rank 0: .* node=0 local=0/2 .*launcher=slurm rank 0/2 local 0/2 node 0" \
  out "rank 1: .* node=0 local=1/2 .*launcher=slurm rank 1/2 local 1/2 node 0" \
  !out "launcher warning"

# Without the plugin MPICH starts every task as a 1-process job (Open MPI
# stops in MPI_Init with its own explanation instead). A world of 1 while
# Slurm says 2 is an error for every task (docs/launch.md), and the advice
# names what srun was given.
if [ "$plugin" = pmi2 ]; then
  check srun_no_plugin srun -n 2 --mpi=none "$demo"
  verdict_fails err "PG_ERR_STATE: MPI sees a world of 1 process, but the launcher (slurm) started 2 processes" \
    err "srun ran without an MPI plugin" err "run 'srun --mpi=pmi2" !out "over 1 ranks"
  if srun --mpi=list 2>&1 | grep -qw pmix; then
    check srun_pmix srun -n 2 --mpi=pmix "$demo"
    verdict_fails err "srun ran with --mpi=pmix (SLURM_MPI_TYPE)" err "run 'srun --mpi=pmi2"
  fi
fi

# A batch job: its step runs the demo on 2 ranks; the script itself runs the
# demo as a plain 1-process program (a serial pre- or post-processing tool),
# which is not a step and must not warn.
cat >"$out/job.sh" <<JOB
#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --output=$out/job.log
set -e
srun --mpi=$plugin "$demo"
echo "== plain"
"$demo" 2>&1
JOB
check sbatch_job sbatch --wait "$out/job.sh"
cat "$out/job.log" >>"$out/sbatch_job.out" 2>/dev/null
verdict out "Submitted batch job" out "over 2 ranks" out "over 1 ranks" !out "warn"

# The example batch script, as a user submits it.
check example_cpu_sbatch sbatch --wait --output="$out/example.log" \
  --export=ALL,MPI_PLUGIN="$plugin" "$examples/cpu.sbatch" "$demo"
cat "$out/example.log" >>"$out/example_cpu_sbatch.out" 2>/dev/null
verdict out "strategy: backend 'fairring' (PGS_BACKEND)" out "over 4 ranks" out "^OK" !out "warn"

if [ -n "$fortran" ]; then
  check srun_fortran srun -n 2 --mpi="$plugin" "$fortran"
  verdict out "heat1d on 2 ranks" out "heat1d: OK"
fi

# An unmodified MPI program through the MPI layer: srun pgs-mpi ./app.
if [ -n "$pgs_mpi" ]; then
  check srun_mpi_layer env PGS_MPI_SUMMARY=1 srun -n 2 --mpi="$plugin" "$pgs_mpi" "$plain_mpi" 512
  verdict out "cg_mpi: n=512 on 2 ranks, .*: OK" err "pgs-mpi summary: routed [1-9][0-9]* calls"
fi

# The PyTorch examples in steps of 2 tasks: init_process_group("pgstrategy"),
# and Lightning's DDPStrategy(process_group_backend="pgstrategy"), which finds
# the ranks through Slurm's variables (and wants --ntasks-per-node).
if [ -n "$torch_python" ]; then
  check srun_torch_ddp srun -n 2 --mpi="$plugin" "$torch_python" "$here/../../examples/python/ddp_train.py"
  verdict out "2 ranks, parameters identical on every rank: True" out "underneath: backend 'mpi'"
  # Lightning's rendezvous host is the first node's name, which here names no
  # address (the private cluster's node is this host under another name).
  check srun_lightning env MASTER_ADDR=127.0.0.1 srun -N 1 --ntasks-per-node=2 --mpi="$plugin" "$torch_python" "$here/../../examples/python/lightning_train.py" \
    --devices 2 --epochs 1
  verdict out "trained on 2 ranks" out "underneath: backend 'mpi'"
fi

echo "Slurm $(sinfo --version | awk '{print $2}'), srun --mpi=$plugin:"
printf '  %s\n' "${results[@]}"
exit $failed
