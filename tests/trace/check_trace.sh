#!/bin/sh
# check_trace.sh CASE WORK MPIEXEC NPFLAG TRACE_JOB PYTHON PG_TRACE [BACKEND...]
#
# Runs one flight-recorder scenario with PGS_TRACE=WORK/CASE and checks what
# pg-trace (and the dumps themselves) say about it. Cases: hang, straggler,
# mismatch, signal, wrap, timeline, backends, shared, bad_dumps, subgroup,
# concurrent, shared_folder.
set -u
case_name=$1 work=$2 mpiexec=$3 npflag=$4 job=$5 python=$6 pgtrace=$7
shift 7
dir=$work/$case_name
rm -rf "$dir"
mkdir -p "$dir"
export PGS_TRACE=$dir
unset PGS_TIMEOUT PGS_DEBUG PGS_BACKEND PGS_TRACE_ENTRIES PGS_RANKS_PER_NODE PGS_FAIRRING_ALGO

fail() { echo "check_trace $case_name: FAIL: $*"; exit 1; }
# The job, stdout and stderr kept; its status in $status.
run() { "$mpiexec" "$npflag" "$@" >"$dir/job.out" 2>&1; status=$?; cat "$dir/job.out"; }
report() { "$python" "$pgtrace" "$dir" >"$dir/report.txt" 2>&1; rstatus=$?; cat "$dir/report.txt"; }
first_line() { head -n 1 "$dir/report.txt"; }
# A Python check of the dumps: the expression gets `dumps` (the JSON of every rank's file).
dumps_check() {
  "$python" - "$dir" "$1" <<'EOF' || fail "the dumps: $1"
import glob, json, sys
dumps = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/pgstrategy-*-rank*.json"))]
ok = eval(sys.argv[2])
print("dumps check:", sys.argv[2], "->", ok)
sys.exit(0 if ok else 1)
EOF
}

case $case_name in
  hang)  # the waiting ranks' dumps name the rank that never came, and the collective
    PGS_TIMEOUT=2 run 3 "$job" hang
    [ "$status" -ne 0 ] || fail "the job should have been ended by the watchdog"
    report
    first_line | grep -Eq "^HANG in strategy .*: allreduce #4 .*rank 2 never arrived" || fail "report: $(first_line)"
    ;;
  straggler)  # rank 1 sleeps 50 ms before each of 10 allreduces
    run 3 "$job" straggler
    [ "$status" -eq 0 ] || fail "the job failed"
    report
    late=$(first_line | sed -En 's/^STRAGGLER in strategy .*: rank 1 \(world 1\) arrives last at [0-9]+ of 10 collectives, ([0-9.]+) ms late.*/\1/p')
    [ -n "$late" ] || fail "report: $(first_line)"
    "$python" -c "import sys; sys.exit(0 if 40 <= float('$late') <= 60 else 1)" ||
      fail "lateness $late ms is not within 20 % of the 50 ms injected"
    ;;
  mismatch)  # rank 0 broadcasts while the others allreduce: the third collective
    PGS_TIMEOUT=3 run 3 "$job" mismatch
    report
    first_line | grep -Eq "^MISMATCH in strategy .*: ranks disagree on collective #3: rank 0 broadcast; ranks 1, 2 allreduce" ||
      fail "report: $(first_line)"
    ;;
  signal)  # SIGUSR1 on a running job: dumps appear, the job goes on and finishes correctly
    run 2 "$job" signal
    [ "$status" -eq 0 ] || fail "the job failed"
    dumps_check "len(dumps) == 2 and all(d['reason'] in ('destroy', 'exit') for d in dumps)"
    ;;
  wrap)  # 16 entries kept of 52 operations: the newest, in order
    PGS_TRACE_ENTRIES=16 run 2 "$job" many 50
    [ "$status" -eq 0 ] || fail "the job failed"
    dumps_check "all([e['seq'] for e in d['strategies'][0]['entries']] == list(range(37, 53)) and d['strategies'][0]['entries'][-1]['op'] == 'destroy' for d in dumps)"
    report
    [ "$rstatus" -eq 0 ] || fail "pg-trace failed"
    ;;
  timeline)  # the Perfetto JSON parses and has a track per rank; the picture is drawn
    run 3 "$job" many 5
    [ "$status" -eq 0 ] || fail "the job failed"
    "$python" "$pgtrace" --perfetto "$dir/timeline.json" "$dir" || fail "pg-trace --perfetto"
    "$python" - "$dir/timeline.json" <<'EOF' || fail "the Perfetto file"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ranks = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
slices = [e for e in events if e["ph"] == "X"]
assert ranks == {0, 1, 2}, ranks
assert {e["pid"] for e in slices} == ranks and all(e["dur"] >= 0 for e in slices)
assert sum(e["name"].startswith("allreduce #") for e in slices) == 15, len(slices)
print("timeline: a track per rank,", len(slices), "slices")
EOF
    if "$python" -c "import matplotlib" 2>/dev/null; then
      "$python" "$pgtrace" --plot "$dir/timeline.png" "$dir" && [ -s "$dir/timeline.png" ] || fail "pg-trace --plot"
    else
      "$python" "$pgtrace" --plot "$dir/timeline.png" "$dir" 2>&1 | grep -q "needs matplotlib" || fail "--plot without matplotlib"
    fi
    ;;
  backends)  # every backend records: the algorithm fairring chose, the device default's calls
    for b in "$@"; do
      name=${b%%:*}
      algo=$(echo "$b" | sed -n 's/^[^:]*://p')
      rm -f "$dir"/pgstrategy-*
      PGS_FAIRRING_ALGO=$algo run 2 "$job" backend "$name"
      [ "$status" -eq 0 ] || fail "the job failed on $b"
      case $b in
        fairring) dumps_check "all(any(e.get('algorithm') == 'fast' and e['op'] == 'allreduce' for e in d['strategies'][0]['entries']) for d in dumps)" ;;
        fairring:hierarchical) dumps_check "all(all(e.get('algorithm') == 'hierarchical' and e.get('slices', 0) > 0 for e in d['strategies'][0]['entries'] if e['op'] == 'allreduce') for d in dumps)" ;;
        fairring:*) dumps_check "all(all(e.get('algorithm') == '$algo' for e in d['strategies'][0]['entries'] if e['op'] == 'allreduce') for d in dumps)" ;;
        plain) dumps_check "all(any(e['op'] == 'reduce_scatter' and e.get('device_default') for e in d['strategies'][0]['entries']) for d in dumps)" ;;
        *) dumps_check "all(d['strategies'][0]['backend'] == '$name' and sum(e['op'] in ('allreduce', 'reduce_scatter', 'allgather') and e['status'] == 'PG_OK' for e in d['strategies'][0]['entries']) == 3 for d in dumps)" ;;
      esac
    done
    ;;
  shared)  # fairring's fast path marks the allreduce whose pg_mem_alloc input its peer read in place
    run 2 "$job" shared
    [ "$status" -eq 0 ] || fail "the job failed"
    dumps_check "all(sorted((e['bytes'], e.get('shared')) for e in d['strategies'][0]['entries'] if e['op'] == 'allreduce' and e.get('algorithm') == 'fast') == [(16384, None), (262144, 'send')] for d in dumps)"
    ;;
  bad_dumps)  # pg-trace on what is not a set of dumps: exit 2, a clear message, no traceback
    expect() {  # expect <what> <pattern>
      "$python" "$pgtrace" "$dir" >"$dir/out.txt" 2>&1
      s=$?
      cat "$dir/out.txt"
      [ "$s" -eq 2 ] || fail "$1: exit status $s, expected 2"
      grep -q "$2" "$dir/out.txt" || fail "$1: no '$2' in the message"
      ! grep -q Traceback "$dir/out.txt" || fail "$1: a traceback"
    }
    expect "an empty folder" "no dumps"
    printf '{"format": "pgstrategy-trace", "version": 1, "job": "j", "rank": 0, "strat' >"$dir/pgstrategy-j-rank0.json"
    expect "a truncated dump" "not a complete dump"
    printf '{"traceEvents": []}\n' >"$dir/pgstrategy-j-rank0.json"
    expect "a foreign JSON file" "not a pgstrategy flight-recorder dump"
    "$python" "$pgtrace" "$dir/no-such-folder" >/dev/null 2>&1
    [ $? -eq 2 ] || fail "a missing folder"
    ;;
  subgroup)  # plain mpiexec, no launcher job id: ranks 0-1 trace a sub-communicator first, then all the world
    unset SLURM_JOB_ID TORCHELASTIC_RUN_ID
    run 3 "$job" subgroup
    [ "$status" -eq 0 ] || fail "the job failed (or hung: it used to)"
    dumps_check "len(dumps) == 3 and len({d['job'] for d in dumps}) == 1"
    ;;
  concurrent)  # dumps from two threads, SIGUSR1, destroys and the watchdog at once: one whole dump per rank
    PGS_TIMEOUT=2 run 3 "$job" concurrent
    [ "$status" -ne 0 ] || fail "the job should have been ended by the watchdog"
    dumps_check "len(dumps) == 3 and all(len(d['strategies']) >= 1 for d in dumps)"
    ;;
  shared_folder)  # links planted at a dump's names lead nowhere; dumps are 0600; two srun steps keep apart
    victim=$work/victim-of-$case_name
    echo precious >"$victim"
    chmod 644 "$victim"
    for name in 77 77.3; do  # the job's name without its step, and with it
      for r in 0 1; do
        ln -s "$victim" "$dir/pgstrategy-$name-rank$r.json.tmp"  # a predictable temporary name
        ln -s "$victim" "$dir/pgstrategy-$name-rank$r.json"
      done
    done
    # Slurm's variables for the ranks only (Hydra reads SLURM_JOB_ID itself).
    run 2 env SLURM_JOB_ID=77 SLURM_STEP_ID=3 "$job" many 3
    [ "$status" -eq 0 ] || fail "the job failed (step 3)"
    run 2 env SLURM_JOB_ID=77 SLURM_STEP_ID=4 "$job" many 3
    [ "$status" -eq 0 ] || fail "the job failed (step 4)"
    [ "$(cat "$victim")" = precious ] || fail "a planted link's target was written: $(head -c 200 "$victim")"
    for step in 3 4; do
      for r in 0 1; do
        f=$dir/pgstrategy-77.$step-rank$r.json
        [ -f "$f" ] && [ ! -L "$f" ] || fail "$f is not a plain file"
        mode=$(stat -c %a "$f")
        [ "$mode" = 600 ] || fail "$f has mode $mode, expected 600"
      done
    done
    leftover=$(find "$dir" -name '*.tmp' ! -type l)
    [ -z "$leftover" ] || fail "temporary files left: $leftover"
    find "$dir" -type l -delete
    dumps_check "sorted(d['job'] for d in dumps) == ['77.3', '77.3', '77.4', '77.4']"
    ;;
  *) echo "check_trace: unknown case '$case_name'"; exit 2 ;;
esac
echo "check_trace $case_name: OK"
