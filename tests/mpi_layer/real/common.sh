# common.sh: sourced by the scripts of tests/mpi_layer/real (bash).
#
# Each script is called as  SCRIPT MPIEXEC PGS_MPI WORKDIR  and runs a real
# third-party MPI code twice with the same ranks and input: plain
# (MPIEXEC -n N prog ...) and through the interposition layer
# (PGS_MPI_SUMMARY=1 MPIEXEC -n N PGS_MPI prog ...). Exit 0: both runs pass
# the code's own checks, their answers agree and the layer routed calls;
# 77: the code is not installed or is built for the other MPI; 1: failure.
#
# PGS_REAL_TIMEOUT (seconds, default 120) bounds every mpiexec.

REAL_NAME=$(basename "$0" .sh)
REAL_TIMEOUT=${PGS_REAL_TIMEOUT:-120}

skip() { echo "SKIP ($REAL_NAME): $*"; exit 77; }
fail() { echo "FAIL ($REAL_NAME): $*"; exit 1; }
note() { echo "== $*"; }

# real_init "$@": checks the arguments, sets MPIEXEC PGS_MPI WORKDIR MPI_FLAVOUR.
real_init() {
  if [ $# -ne 3 ]; then
    echo "usage: $0 MPIEXEC PGS_MPI WORKDIR" >&2
    exit 2
  fi
  MPIEXEC=$1 PGS_MPI=$2 WORKDIR=$3
  command -v "$MPIEXEC" >/dev/null 2>&1 || fail "launcher '$MPIEXEC' not found"
  MPIEXEC=$(command -v "$MPIEXEC")
  [ -x "$PGS_MPI" ] || fail "wrapper '$PGS_MPI' is not an executable file"
  PGS_MPI=$(cd "$(dirname "$PGS_MPI")" && pwd)/$(basename "$PGS_MPI")
  mkdir -p "$WORKDIR" || fail "cannot create '$WORKDIR'"
  WORKDIR=$(cd "$WORKDIR" && pwd)
  MPI_FLAVOUR=$(launcher_flavour)
  [ "$MPI_FLAVOUR" = unknown ] && skip "cannot tell the MPI of '$MPIEXEC' from its --version"
  if [ "$MPI_FLAVOUR" = openmpi ]; then
    # 3 ranks on a 2-core machine; the root permission is the caller's business.
    export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
    # waiting ranks yield the core: a busy machine slows a run 3x less
    export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  fi
  return 0
}

# launcher_flavour: mpich | openmpi | unknown, from MPIEXEC --version.
launcher_flavour() {
  local v
  v=$("$MPIEXEC" --version 2>&1 | head -n 20)
  case $v in
    *"Open MPI"* | *OpenRTE* | *"Open RTE"* | *PRRTE*) echo openmpi ;;
    *HYDRA* | *MPICH* | *Hydra*) echo mpich ;;
    *) echo unknown ;;
  esac
}

# binary_flavour FILE: the MPI that FILE (or a library it loads) links.
binary_flavour() {
  local l
  l=$(ldd "$1" 2>/dev/null)
  case $l in
    *libmpich.so*) echo mpich ;;
    *libmpi.so.40* | *libopen-pal.so* | *libopen-rte.so*) echo openmpi ;;
    *) echo unknown ;;
  esac
}

# need_packages PKG...: skip unless every Debian package is installed.
need_packages() {
  local p
  command -v dpkg-query >/dev/null 2>&1 || skip "no dpkg-query: not a Debian-based system (needs: $*)"
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      skip "Debian package '$p' is not installed (tests/mpi_layer/real/packages.txt)"
  done
}

# need_flavour FILE: skip unless FILE uses the MPI of MPIEXEC.
need_flavour() {
  local f
  f=$(binary_flavour "$1")
  [ "$f" = "$MPI_FLAVOUR" ] ||
    skip "$(basename "$1") is built for MPI '$f', the launcher $MPIEXEC is '$MPI_FLAVOUR'"
}

# env_arg NAME VALUE: the launcher's option that sets NAME=VALUE on every rank.
env_arg() {
  if [ "$MPI_FLAVOUR" = openmpi ]; then
    printf '%s\n' -x "$1=$2"
  else
    printf '%s\n' -genv "$1" "$2"
  fi
}

# run_mpi MODE DIR NP [LAUNCHER-ARGS...] -- PROG [ARGS...]
#   MODE plain or layer; runs in DIR, stdout to DIR/stdout, stderr to DIR/stderr.
#   Returns the launcher's status (124: timed out after REAL_TIMEOUT s).
run_mpi() {
  local mode=$1 dir=$2 np=$3 largs=() pre=() rc t0 t1 a cmd
  shift 3
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    largs+=("$1")
    shift
  done
  shift
  [ "$mode" = layer ] && pre=("$PGS_MPI")
  mkdir -p "$dir"
  t0=$(date +%s.%N)
  (
    cd "$dir" || exit 1
    if [ "$mode" = layer ]; then export PGS_MPI_SUMMARY=1; else unset PGS_MPI_SUMMARY; fi
    exec timeout -k 10 "$REAL_TIMEOUT" "$MPIEXEC" -n "$np" "${largs[@]}" "${pre[@]}" "$@"
  ) >"$dir/stdout" 2>"$dir/stderr"
  rc=$?
  t1=$(date +%s.%N)
  cmd="$MPIEXEC -n $np"
  [ "$mode" = layer ] && cmd="PGS_MPI_SUMMARY=1 $cmd"
  for a in "${largs[@]}" "${pre[@]}" "$@"; do cmd="$cmd $a"; done
  printf '[%s np=%s] exit %s after %.2f s: %s\n' "$mode" "$np" "$rc" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$cmd"
  [ $rc -eq 124 ] && echo "  timed out after $REAL_TIMEOUT s"
  return $rc
}

# show_tail FILE [N]: the last N (default 20) lines of FILE, indented.
show_tail() {
  tail -n "${2:-20}" "$1" | sed 's/^/  | /'
}

# parse_summary DIR: sets ROUTED ROUTED_BYTES PASSED from the last summary
# line on DIR/stderr (the layer run's); returns 1 when there is none.
SUMMARY_RE='^pgs-mpi summary: routed ([0-9]+) calls \(([0-9]+) bytes\), passed ([0-9]+) calls to MPI$'
parse_summary() {
  local line
  line=$(grep -E "$SUMMARY_RE" "$1/stderr" | tail -n 1)
  [ -n "$line" ] || return 1
  ROUTED=$(echo "$line" | sed -E "s/$SUMMARY_RE/\1/")
  ROUTED_BYTES=$(echo "$line" | sed -E "s/$SUMMARY_RE/\2/")
  PASSED=$(echo "$line" | sed -E "s/$SUMMARY_RE/\3/")
}

# no_summary DIR: fails, showing the end of DIR/stderr.
no_summary() {
  echo "  stderr of the layer run (last lines):"
  show_tail "$1/stderr" 30
  fail "no line 'pgs-mpi summary: routed R calls (B bytes), passed P calls to MPI' on the layer run's stderr in $1 (is PGS_MPI the layer? did rank 0 reach MPI_Finalize?)"
}

# print_summary DIR: the table on DIR/stderr that ends with the summary line
# (the lines before it back to a blank line, at most 40).
print_summary() {
  local n
  n=$(grep -nE "$SUMMARY_RE" "$1/stderr" | tail -n 1 | cut -d: -f1)
  [ -n "$n" ] || return 1
  note "layer summary (rank 0, stderr)"
  head -n "$n" "$1/stderr" | tail -n 40 |
    awk '{ if ($0 ~ /^[[:space:]]*$/) buf = ""; else buf = buf $0 "\n" } END { printf "%s", buf }' |
    grep -v -E '^(Note: The following floating-point exceptions|BLACS WARNING|from \{-1,-1\})' | sed 's/^/  /'
}

# check_summary DIR: prints the layer run's summary table (DIR/stderr), sets
# ROUTED ROUTED_BYTES PASSED; fails unless there is one with ROUTED > 0.
check_summary() {
  parse_summary "$1" || no_summary "$1"
  print_summary "$1"
  echo "  -> routed $ROUTED calls ($ROUTED_BYTES bytes), passed $PASSED calls to MPI"
  [ "$ROUTED" -gt 0 ] || fail "the layer routed no call (routed $ROUTED, passed $PASSED to MPI)"
}

# compare_tables PLAIN LAYER RTOL LABEL: whitespace-separated numeric tables,
# same shape; each value within RTOL (relative, 1e-12 absolute floor).
# Prints the worst relative difference; returns 1 on a mismatch (printed).
compare_tables() {
  awk -v rtol="$3" -v label="$4" '
    NR == FNR { a[FNR] = $0; na = FNR; next }
    { b[FNR] = $0; nb = FNR }
    END {
      bad = 0; worst = 0; where = "-"
      if (na != nb) { printf "  %s: %d rows plain, %d rows through the layer\n", label, na, nb; exit 1 }
      if (na == 0) { printf "  %s: no rows\n", label; exit 1 }
      for (i = 1; i <= na; i++) {
        n1 = split(a[i], x); n2 = split(b[i], y)
        if (n1 != n2) { printf "  %s row %d: %d values plain, %d through the layer\n", label, i, n1, n2; bad = 1; continue }
        for (j = 1; j <= n1; j++) {
          d = x[j] - y[j]; if (d < 0) d = -d
          m = (x[j] < 0 ? -x[j] : x[j]); m2 = (y[j] < 0 ? -y[j] : y[j]); if (m2 > m) m = m2
          r = (m > 0 ? d / m : 0)
          if (r > worst) { worst = r; where = "row " i " column " j }
          if (d > rtol * m && d > 1e-12) {
            if (bad < 10) printf "  %s row %d column %d: plain %s, layer %s (relative difference %.3g > %g)\n", label, i, j, x[j], y[j], r, rtol
            bad++
          }
        }
      }
      printf "  %s: %d rows compared, worst relative difference %.3g (%s), tolerance %g\n", label, na, worst, where, rtol
      exit bad ? 1 : 0
    }' "$1" "$2"
}
