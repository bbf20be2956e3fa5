#!/usr/bin/env bash
# lammps.sh MPIEXEC PGS_MPI WORKDIR
#
# LAMMPS (Debian packages lammps, lammps-examples; built with Open MPI): the
# 3d Lennard-Jones melt example (examples/melt/in.melt, 4000 atoms, 250 steps)
# with thermo output every 25 steps in full precision, run plain and through
# the layer on 2 ranks, then on 3 ranks with PGS_RANKS_PER_NODE=2 (virtual
# nodes of 2+1 ranks). The thermo tables (temperature, energies, pressure
# tensor, mean-squared displacement: MPI_Allreduce sums of doubles) must agree
# within a relative 1e-6 and each run must end without a LAMMPS error.
set -u
. "$(dirname "$0")/common.sh"
real_init "$@"

need_packages lammps lammps-examples
LMP=$(command -v lmp || true)
[ -n "$LMP" ] || skip "no 'lmp' on PATH although the lammps package is installed"
need_flavour "$LMP"
SRC=/usr/share/lammps/examples/melt/in.melt
[ -r "$SRC" ] || skip "$SRC not found (lammps-examples)"
RTOL=${PGS_REAL_LAMMPS_RTOL:-1e-6}

# The input: the example with a full-precision thermo line every 25 steps.
IN=$WORKDIR/in.melt
awk '
  /^thermo[ \t]/ {
    print "compute\t\tmsd all msd"
    print "thermo_style\tcustom step temp epair emol etotal press pxx pyy pzz pxy c_msd[4]"
    print "thermo_modify\tformat float %.15g"
    print "thermo\t\t25"
    done = 1; next
  }
  { print }
  END { if (!done) exit 1 }' "$SRC" >"$IN" || fail "no 'thermo' line in $SRC to rewrite (example changed?)"
grep -qE '^run[[:space:]]+250' "$IN" || fail "$SRC no longer runs 250 steps; the expected thermo rows would be wrong"
note "input: $IN (from $SRC)"

# thermo DIR: the thermo rows of DIR/log.lammps (the block after 'Step ...').
thermo() {
  awk '/^ *Step / { on = 1; next } /^Loop time/ { on = 0 } on && NF' "$1/log.lammps"
}

# own_checks DIR: LAMMPS finished, no error, 11 thermo rows (steps 0..250).
own_checks() {
  local d=$1 rows
  [ -r "$d/log.lammps" ] || { show_tail "$d/stdout"; show_tail "$d/stderr"; fail "no log.lammps in $d"; }
  if grep -qE '^ERROR|ERROR:' "$d/log.lammps" "$d/stdout" "$d/stderr"; then
    grep -hE '^ERROR|ERROR:' "$d/log.lammps" "$d/stdout" "$d/stderr" | head -n 5 | sed 's/^/  | /'
    fail "LAMMPS reported an error ($d)"
  fi
  grep -q '^Total wall time' "$d/log.lammps" || fail "LAMMPS did not finish ($d/log.lammps has no 'Total wall time')"
  rows=$(thermo "$d" | wc -l)
  [ "$rows" -eq 11 ] || fail "expected 11 thermo rows (steps 0, 25, ..., 250) in $d/log.lammps, found $rows"
}

# case_run LABEL NP [LAUNCHER-ARGS...]: plain and layer runs, checks, comparison.
case_run() {
  local label=$1 np=$2 p l r rc
  shift 2
  p=$WORKDIR/$label/plain
  l=$WORKDIR/$label/layer
  note "$label: $np ranks ${*:-}"
  run_mpi plain "$p" "$np" "$@" -- "$LMP" -in "$IN" -log log.lammps -echo none -screen none ||
    { rc=$?; show_tail "$p/stderr"; fail "$label: the plain run failed (exit $rc)"; }
  own_checks "$p"
  run_mpi layer "$l" "$np" "$@" -- "$LMP" -in "$IN" -log log.lammps -echo none -screen none ||
    { rc=$?; show_tail "$l/stderr" 30; fail "$label: the run through the layer failed (exit $rc)"; }
  own_checks "$l"
  check_summary "$l"
  thermo "$p" >"$p/thermo.txt"
  thermo "$l" >"$l/thermo.txt"
  echo "  thermo columns:$(grep -m1 '^ *Step ' "$p/log.lammps" | tr -s ' ')"
  for r in 1 11; do
    echo "  plain: $(sed -n "${r}p" "$p/thermo.txt" | tr -s ' ')"
    echo "  layer: $(sed -n "${r}p" "$l/thermo.txt" | tr -s ' ')"
  done
  compare_tables "$p/thermo.txt" "$l/thermo.txt" "$RTOL" "$label thermo" ||
    fail "$label: the thermo output through the layer differs from the plain run"
}

case_run np2 2
mapfile -t EXTRA < <(env_arg PGS_RANKS_PER_NODE 2)
case_run np3_2p1 3 "${EXTRA[@]}"
echo "PASS ($REAL_NAME): thermo agrees on 2 ranks and on 3 ranks (nodes of 2+1)"
