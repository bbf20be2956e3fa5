#!/usr/bin/env bash
# hpcc.sh MPIEXEC PGS_MPI WORKDIR
#
# HPC Challenge (Debian package hpcc; built with Open MPI) on 2 ranks with a
# small generated hpccinf.txt (HPL N=500, NB=32, a 1x2 grid): HPL, PTRANS,
# DGEMM, STREAM, RandomAccess, FFT and the latency/bandwidth rings, run plain
# and through the layer. Each run must pass all of HPCC's own checks in
# hpccoutf.txt (HPL and PTRANS residuals, RandomAccess errors, STREAM
# validation, FFT error, per-node error flags, Success=1); the two runs must
# agree on the problem sizes and on the HPL norms (relative 1e-6).
set -u
. "$(dirname "$0")/common.sh"
real_init "$@"

need_packages hpcc
HPCC=$(command -v hpcc || true)
[ -n "$HPCC" ] || skip "no 'hpcc' on PATH although the hpcc package is installed"
need_flavour "$HPCC"
NP=2
RTOL=${PGS_REAL_HPCC_RTOL:-1e-6}

# hpccinf.txt: the HPL.dat format of HPCC's example, a small problem.
write_input() {
  cat >"$1/hpccinf.txt" <<'EOF'
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
500          Ns
1            # of NBs
32           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
EOF
}

# val DIR KEY: KEY=value from the Summary section of DIR/hpccoutf.txt.
val() {
  sed -n "/^Begin of Summary section/,/^End of Summary section/s/^$2=//p" "$1/hpccoutf.txt" | head -n 1
}

# own_checks DIR: HPCC's own verdicts in DIR/hpccoutf.txt.
own_checks() {
  local d=$1 o=$1/hpccoutf.txt bad="" n
  [ -r "$o" ] || { show_tail "$d/stderr"; fail "no hpccoutf.txt in $d"; }
  grep -q '^End of HPC Challenge tests' "$o" || bad="$bad; HPCC did not finish"
  [ "$(val "$d" Success)" = 1 ] || bad="$bad; Success=$(val "$d" Success)"
  # HPL and PTRANS: every test completed and passed its residual check
  n=$(grep -cE 'tests completed and passed residual checks' "$o")
  [ "$n" -eq 2 ] || bad="$bad; $n of 2 'passed residual checks' summaries (HPL, PTRANS)"
  grep -qE '^ *[1-9][0-9]* tests completed and failed residual checks' "$o" && bad="$bad; failed residual checks"
  grep -qE '^ *0 tests completed and passed residual checks' "$o" && bad="$bad; a test that passed none"
  grep -qE '(^|[^a-z])FAILED' "$o" && bad="$bad; FAILED lines"
  grep -qE '\.\.\.\.\.\. PASSED' "$o" || bad="$bad; no HPL residual PASSED"
  # RandomAccess: all four verifications passed
  n=$(grep -cE '^Found [0-9]+ errors in [0-9]+ locations \(passed\)' "$o")
  [ "$n" -eq 4 ] || bad="$bad; $n of 4 RandomAccess verifications passed"
  # Star/Single sections: no node with an error
  grep -E '^Node\(s\) with error' "$o" | grep -vqE '^Node\(s\) with error 0$' && bad="$bad; a node reported an error"
  grep -q '^Solution Validates' "$o" || bad="$bad; STREAM did not validate"
  awk -v e="$(val "$d" MPIFFT_maxErr)" 'BEGIN { exit !(e != "" && e + 0 < 1e-9) }' ||
    bad="$bad; MPIFFT_maxErr=$(val "$d" MPIFFT_maxErr)"
  if [ -n "$bad" ]; then
    grep -nE 'FAILED|failed|error|Error' "$o" | head -n 10 | sed 's/^/  | /'
    fail "HPCC's own checks fail in $d:${bad#;}"
  fi
  echo "  own checks pass ($d): HPL and PTRANS residuals, 4 RandomAccess verifications, STREAM, FFT, per-node errors, Success=1"
}

p=$WORKDIR/plain
l=$WORKDIR/layer
mkdir -p "$p" "$l"
rm -f "$p/hpccoutf.txt" "$l/hpccoutf.txt" # HPCC appends to it
write_input "$p"
write_input "$l"
note "input: hpccinf.txt, HPL N=500 NB=32 on a 1x2 grid, $NP ranks"
run_mpi plain "$p" "$NP" -- "$HPCC" || { rc=$?; show_tail "$p/stderr"; fail "the plain run failed (exit $rc)"; }
own_checks "$p"
run_mpi layer "$l" "$NP" -- "$HPCC" || { rc=$?; show_tail "$l/stderr" 30; fail "the run through the layer failed (exit $rc)"; }
own_checks "$l"
check_summary "$l"

note "compared (plain / layer)"
bad=0
for k in CommWorldProcs HPL_N HPL_NB HPL_nprow HPL_npcol PTRANS_n DGEMM_N STREAM_VectorSize FFT_N MPIFFT_N \
  MPIRandomAccess_N MPIRandomAccess_Errors MPIRandomAccess_LCG_Errors; do
  a=$(val "$p" "$k") b=$(val "$l" "$k")
  printf '  %-28s %16s %16s %s\n' "$k" "$a" "$b" "$([ "$a" = "$b" ] && echo equal || echo DIFFERENT)"
  [ -n "$a" ] && [ "$a" = "$b" ] || bad=1
done
for k in HPL_Anorm1 HPL_AnormI HPL_BnormI HPL_Xnorm1 HPL_XnormI; do
  a=$(val "$p" "$k") b=$(val "$l" "$k")
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a); if (m == 0) m = 1; printf "%.3g", d / m }')
  ok=$(awk -v r="$r" -v t="$RTOL" 'BEGIN { print (r <= t ? "within" : "BEYOND") }')
  printf '  %-28s %16s %16s relative difference %s (%s %s)\n' "$k" "$a" "$b" "$r" "$ok" "$RTOL"
  [ -n "$a" ] && [ "$ok" = within ] || bad=1
done
for k in HPL_RnormI PTRANS_residual MPIFFT_maxErr; do
  printf '  %-28s %16s %16s (round-off level, own checks only)\n' "$k" "$(val "$p" "$k")" "$(val "$l" "$k")"
done
[ $bad -eq 0 ] || fail "the run through the layer disagrees with the plain run (above)"
echo "PASS ($REAL_NAME): all HPCC checks pass in both runs, sizes and HPL norms agree"
