#!/usr/bin/env bash
# scalapack.sh MPIEXEC PGS_MPI WORKDIR
#
# ScaLAPACK's own test programs (Debian package scalapack-mpi-test, built for
# both MPICH and Open MPI; the inputs from scalapack-test-common): the BLACS
# tester (point-to-point, broadcasts and sum/amax/amin combines in every
# scope and topology, five precisions) and the LU, Cholesky, QR, inverse,
# least-squares, complex LU, tridiagonal, bidiagonal and nonsymmetric
# eigenvalue drivers, on 2 ranks, with the package's .dat inputs reduced to
# the grids 1x1, 1x2 and 2x1. Runs the build that matches MPIEXEC, plain and
# through the layer: each program must pass its own residual checks in both
# runs, with the same set of tests passed (parameters and verdicts, line by
# line).
#
# ScaLAPACK 2.2's testers hang now and then on their own (ranks diverge, also
# without the layer: Reference-ScaLAPACK/scalapack#121); the condition
# estimator tests, where that happens in one run of three, are left out; a
# program that still hangs is reported and run again (PGS_REAL_TRIES, default
# 3, each run bounded by PGS_REAL_TIMEOUT, default 60 s here: a program takes
# well under a second on an idle machine, up to ~25 s on one whose cores
# other MPI jobs keep busy).
set -u
PGS_REAL_TIMEOUT=${PGS_REAL_TIMEOUT:-60}
. "$(dirname "$0")/common.sh"
real_init "$@"

need_packages scalapack-mpi-test scalapack-test-common
TDIR=""
for d in /usr/lib/*/scalapack/"$MPI_FLAVOUR"-tests; do
  [ -x "$d/xdlu" ] && TDIR=$d && break
done
[ -n "$TDIR" ] || skip "no ScaLAPACK test programs for '$MPI_FLAVOUR' (/usr/lib/*/scalapack/$MPI_FLAVOUR-tests)"
need_flavour "$TDIR/xdlu"
DAT=/usr/share/scalapack
if [ ! -r "$DAT/LU.dat" ] || [ ! -r "$DAT/BLACS/bt.dat" ]; then skip "ScaLAPACK test inputs not found in $DAT"; fi
NP=2
TRIES=${PGS_REAL_TRIES:-3}

# the programs (each reads its .dat input from the working directory)
PROGS="xCbtest xdlu xdllt xdqr xdinv xdls xzlu xdtrd xdbrd xdnep"

# The inputs: grids 1x1, 1xNP, NPx1; no condition estimator tests; the
# BLACS tester without its auxiliary tests (they end in BLACS_ABORT).
IN=$WORKDIR/inputs
mkdir -p "$IN"
for f in LU LLT QR INV LS TRD BRD NEP; do
  awk -v n=$NP '
    /[Vv]alues of P/ { $0 = "1 1 " n "\t\tvalues of P"; p++ }
    /[Vv]alues of Q/ { $0 = "1 " n " 1\t\tvalues of Q"; q++ }
    /[Nn]umber of process(or)? grids/ { $0 = "3\t\tnumber of process grids"; g++ }
    /Cond\. Est\./ { $0 = "F\t\t(T or F) Test Cond. Est. and Iter. Ref. Routines" }
    { print }
    END { exit !(p == 1 && q == 1 && g == 1) }' "$DAT/$f.dat" >"$IN/$f.dat" ||
    fail "$DAT/$f.dat: no single grid section to rewrite (input format changed?)"
done
for f in sdrv bsbr comb; do
  awk -v n=$NP '
    /Number of grids/ { $0 = "3\t\tNumber of grids"; g++ }
    /NPROW *$/ { $0 = "1 1 " n "\t\tNPROW"; p++ }
    /NPCOL *$/ { $0 = "1 " n " 1\t\tNPCOL"; q++ }
    { print }
    END { exit !(p == 1 && q == 1 && g == 1) }' "$DAT/BLACS/$f.dat" >"$IN/$f.dat" ||
    fail "$DAT/BLACS/$f.dat: no single grid section to rewrite (input format changed?)"
done
sed -E "s/^'T'([[:space:]]+Run AUX)/'F'\1/" "$DAT/BLACS/bt.dat" >"$IN/bt.dat"
grep -q "^'F'.*Run AUX" "$IN/bt.dat" || fail "$DAT/BLACS/bt.dat: no 'Run AUX?' line to turn off"
note "inputs: $IN (from $DAT, grids 1x1 1x$NP ${NP}x1), programs from $TDIR, $NP ranks"

# verdicts FILE: the test lines with their verdicts, timings and residuals
# (numbers with a decimal point) blanked, so that two runs compare line by line.
verdicts() {
  grep -E 'PASSED|FAILED|SKIPPED|tests completed|tests skipped|Finished|NO FAILURES|TESTS;' "$1" |
    sed -E 's/[-+]?[0-9]*\.[0-9]+([EeDd][-+]?[0-9]+)?/#/g; s/[[:space:]]+/ /g'
}

# own_check FILE PROG: the program's own verdict; prints a one-line count.
own_check() {
  local f=$1 prog=$2
  if [ "$prog" = xCbtest ]; then
    grep -q 'THERE WERE NO FAILURES IN THIS TEST RUN' "$f" || return 1
    awk '/TESTS;/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^PASSED/) s += $i } END { printf "%d passed", s }' "$f"
  else
    grep -qE '^ *Finished +[0-9]+ tests' "$f" || return 1
    grep -qE '^ *0 tests completed and failed residual checks' "$f" || return 1
    grep -qE '^ *[1-9][0-9]* tests completed and passed residual checks' "$f" || return 1
    awk '/tests completed and passed/ { printf "%d passed", $1 } / tests skipped / { printf ", %d skipped", $1 }' "$f"
  fi
}

# run_all MODE DIR: every program in DIR/<prog> (plain or layer), its own
# checks; COUNT[MODE.prog]: what passed (and, through the layer, what the
# layer's summary says). Each program is an MPI job of its own, with its own
# summary line; the routed calls of all of them must be more than none.
declare -A COUNT
TOTAL_ROUTED=0
run_all() {
  local mode=$1 dir=$2 pp prog try rc d
  for pp in $PROGS; do
    prog=${pp%%:*}
    d=$dir/$prog
    mkdir -p "$d"
    cp "$IN"/*.dat "$d/"
    for try in $(seq "$TRIES"); do
      run_mpi "$mode" "$d" "$NP" -- "$TDIR/$prog"
      rc=$?
      [ $rc -ne 124 ] && break
      echo "  $prog timed out (try $try of $TRIES; ScaLAPACK's testers hang on their own now and then)"
    done
    [ $rc -eq 0 ] || { show_tail "$d/stdout" 10; show_tail "$d/stderr" 20; fail "$prog ($mode) exited $rc"; }
    COUNT[$mode.$prog]=$(own_check "$d/stdout" "$prog") || {
      verdicts "$d/stdout" | grep -E 'FAILED|failed' | grep -vE '(^| )0 FAILED|^ ?0 tests completed and failed' |
        head -n 10 | sed 's/^/  | /'
      fail "$prog ($mode) fails its own checks ($d/stdout)"
    }
    if [ "$mode" = layer ]; then
      parse_summary "$d" || no_summary "$d"
      COUNT[$mode.$prog]="${COUNT[$mode.$prog]}; routed $ROUTED, passed $PASSED"
      TOTAL_ROUTED=$((TOTAL_ROUTED + ROUTED))
    fi
  done
}

p=$WORKDIR/plain
l=$WORKDIR/layer
note "plain runs"
run_all plain "$p"
note "runs through the layer"
run_all layer "$l"
print_summary "$l/xCbtest"
echo "  (the BLACS tester's; each program's totals below)"

note "compared per program (plain | layer)"
bad=0
for pp in $PROGS; do
  prog=${pp%%:*}
  verdicts "$p/$prog/stdout" >"$p/$prog/verdicts"
  verdicts "$l/$prog/stdout" >"$l/$prog/verdicts"
  if cmp -s "$p/$prog/verdicts" "$l/$prog/verdicts"; then same="same $(wc -l <"$p/$prog/verdicts") verdict lines"; else
    same="DIFFERENT verdicts"
    bad=1
  fi
  printf '  %-8s %-22s | %-60s %s\n' "$prog" "${COUNT[plain.$prog]}" "${COUNT[layer.$prog]}" "$same"
  [ "$same" = "DIFFERENT verdicts" ] && diff "$p/$prog/verdicts" "$l/$prog/verdicts" | head -n 10 | sed 's/^/    /'
done
[ $bad -eq 0 ] || fail "the tests passed through the layer differ from the plain run (above)"
[ $TOTAL_ROUTED -gt 0 ] || fail "the layer routed no call in any program"
echo "PASS ($REAL_NAME): all $(echo "$PROGS" | wc -w) programs pass the same tests plain and through the layer; $TOTAL_ROUTED calls routed"
