#!/usr/bin/env bash
# The fault campaign (label fault): one rank of a job is killed (SIGKILL) at a
# chosen point, and the job must end by itself.
#
#   fault_campaign.sh CASE LAUNCHER
#
# CASE: create, fast, hierarchical, across, dump, rendezvous,
# before_rendezvous (fault_job.c says where the victim dies in each).
# LAUNCHER: mpiexec (MPICH's Hydra, which ends the job when a process dies)
# or copies (plain copies with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT: the
# library's bootstrap ends them, docs/launch.md). The rendezvous cases exist
# only for plain copies: under mpiexec there is no rendezvous (Hydra forms the
# job before any process runs).
#
# Set by tests/faults/CMakeLists.txt: FAULT_JOB (the job), MPIEXEC.
# Optional: FAULT_BOUND (seconds, default 20), FAULT_SPARE=1 (the victim does
# not die: every case must then fail; a check of the checks).
#
# Checked for every case:
#  1. the victim reaches its point and dies (its notice, and under plain
#     copies its status 137);
#  2. every other process of the job -- each rank, and under mpiexec mpiexec
#     itself and Hydra's proxy -- has ended within FAULT_BOUND seconds of the
#     death. The job normally ends within a fraction of a second (Hydra, and
#     the bootstrap: 0.05 to 0.15 s measured, docs/launch.md); 20 s leaves
#     room for a loaded 2-core CI machine running other jobs beside this one,
#     and stays far below every long wait in the library (PGS_BOOTSTRAP_TIMEOUT
#     and PGS_BOOTSTRAP_EXIT_TIMEOUT, 300 s by default; set to 60 s here for
#     plain copies, so that a case that waits on one fails, yet ends), so a
#     survivor that hangs on one of them fails the case;
#  3. some output names the dead rank: under mpiexec Hydra's "BAD TERMINATION"
#     report with the victim's pid and signal 9; under plain copies every
#     survivor's "rank V (host ..., pid P) died" (P: the victim's pid), or,
#     in the rendezvous, "... left the rendezvous" / "rank V of N did not
#     reach the job's rendezvous";
#  4. no process of the job is left: every pid the job recorded (with its
#     start time, so that a reused pid is not taken for it) and every process
#     whose environment carries this run's FAULT_TAG is gone. Leftovers are
#     shown (ps, the kernel's stack, gdb's backtraces), killed, and fail the
#     case.
# Prints what it checked; exit 0 when all held, 1 otherwise.
set -u
case_name=$1
launcher=$2
: "${FAULT_JOB:?the job program (set by tests/faults/CMakeLists.txt)}" "${MPIEXEC:?mpiexec}"
bound=${FAULT_BOUND:-20}
start_limit=40 # seconds for the victim to reach its point (the job's start included)
out=$(mktemp -d "${TMPDIR:-/tmp}/pg-fault-$case_name-$launcher.XXXX")
# Whatever of the job is still running when this script ends, however it
# ends (ctest's timeout included), is killed.
kill_left() { [ -n "${left:-}" ] && echo "$left" | while read -r pid _; do kill -KILL "$pid" 2>/dev/null; done; }
trap 'kill_left; rm -rf "$out"' EXIT
failed=0
ok() { echo "ok: $*"; }
bad() {
  echo "FAILED: $*"
  failed=1
}

# What the library or an outer job might have set must not steer these jobs.
unset PGS_TIMEOUT PGS_BACKEND PGS_DEBUG PGS_TRACE PGS_RANKS_PER_NODE PGS_FAIRRING_ALGO PGS_LOG \
  PGS_BOOTSTRAP_ADDR PGS_BOOTSTRAP_SECRET RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT \
  TORCHELASTIC_RUN_ID PMI_FD PMI_RANK PMI_SIZE PMI_PORT PMI_ID HYDI_CONTROL_FD MPI_LOCALRANKID

# case: ranks, victim, phase, extra environment
n=3 victim=1 phase=$case_name extra=()
case $case_name in
  create | fast | hierarchical) ;;
  across)
    n=4 victim=2
    extra=(PGS_RANKS_PER_NODE=2) ;;
  dump)
    mkdir -p "$out/trace"
    extra=(PGS_TRACE="$out/trace") ;;
  rendezvous | before_rendezvous)
    phase=${case_name/_/-}
    if [ "$launcher" != copies ]; then
      echo "the rendezvous is the bootstrap's, for plain copies only: nothing to kill under $launcher"
      exit 2
    fi
    [ "$case_name" = before_rendezvous ] && extra=(PGS_BOOTSTRAP_TIMEOUT=5) ;;
  *)
    echo "unknown case $case_name"
    exit 2 ;;
esac
tag=$case_name.$launcher.$$.$RANDOM
common=(FAULT_TAG="$tag" FAULT_DIR="$out" FAULT_VICTIM="$victim" FAULT_SPARE="${FAULT_SPARE:-0}")

now() { date +%s.%N; }
# a - b, in seconds with two decimals
diff_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
later() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# Whether process PID, started at START (clock ticks since boot; none: any
# start) still runs (a zombie has ended: it only waits to be reaped).
runs() {
  local line fields
  read -r line 2>/dev/null <"/proc/$1/stat" || return 1
  read -r -a fields <<<"${line##*) }"
  [ "${fields[0]}" != Z ] && { [ -z "${2:-}" ] || [ "${fields[19]}" = "$2" ]; }
}
# The processes whose environment carries this run's tag.
tagged() {
  grep -lsxzF "FAULT_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | sed 's|/proc/\([0-9]*\)/environ|\1|'
}
# Every process of the job that still runs, one "pid what" a line.
alive() {
  local r pid st ppid pst
  # What this script started (mpiexec, or the copies), until reaped.
  for pid in ${launcher_pid:-} "${pids[@]}"; do runs "$pid" && echo "$pid started by this script"; done
  for ((r = 0; r < n; ++r)); do
    [ -f "$out/pid.$r" ] || continue
    read -r pid st ppid pst <"$out/pid.$r"
    runs "$pid" "$st" && echo "$pid rank $r"
    # Hydra's proxy; a plain copy's parent is this script.
    [ "$ppid" != $$ ] && runs "$ppid" "$pst" && echo "$ppid the parent of rank $r"
  done
  for pid in $(tagged); do echo "$pid a process of the job"; done
}

# -- the job -------------------------------------------------------------------
started=$(now)
declare -a pids=() rc
launcher_pid=""
if [ "$launcher" = mpiexec ]; then
  # -print-all-exitcodes: the banner names one process with a bad status,
  # which may be one Hydra killed while cleaning up; this list has every rank's.
  env "${common[@]}" "${extra[@]}" "$MPIEXEC" -print-all-exitcodes -n "$n" "$FAULT_JOB" "$phase" \
    >"$out/mpiexec.out" 2>&1 &
  launcher_pid=$!
elif [ "$launcher" = copies ]; then
  . "$(dirname "${BASH_SOURCE[0]}")/../common/held_port.sh"
  port=$(held_port) # held until rank 0 listens on it
  for ((r = 0; r < n; ++r)); do
    env "${common[@]}" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" WORLD_SIZE="$n" RANK="$r" LOCAL_RANK="$r" \
      LOCAL_WORLD_SIZE="$n" PGS_BOOTSTRAP_TIMEOUT=60 PGS_BOOTSTRAP_EXIT_TIMEOUT=60 "${extra[@]}" \
      "$FAULT_JOB" "$phase" >"$out/copy$r.out" 2>&1 &
    pids[r]=$!
  done
else
  echo "unknown launcher $launcher"
  exit 2
fi

# -- the death, and the end of every other process -------------------------------
death="" died_at="" where="" victim_pid="" last=""
declare -a ended
read_death() {
  if [ -z "$death" ] && [ -f "$out/dead.$victim" ]; then
    read -r victim_pid death where <"$out/dead.$victim"
    died_at=$(diff_s "$death" "$started")
  fi
}
while :; do
  left=$(alive)
  read_death  # after the look: a death and the job's end may come between two looks
  gone=()
  if [ -n "$death" ]; then
    for ((r = 0; r < n; ++r)); do
      [ "$r" = "$victim" ] || [ -n "${ended[r]:-}" ] || [ ! -f "$out/pid.$r" ] && continue
      read -r pid st _ <"$out/pid.$r"
      runs "$pid" "$st" || gone+=("$r")
    done
  fi
  t=$(now) # what was found gone was gone by then
  for r in "${gone[@]}"; do ended[r]=$(diff_s "$t" "$death"); done
  [ -z "$left" ] && break
  if [ -n "$death" ] && later "$(diff_s "$t" "$death")" "$bound"; then
    last=over
    break
  fi
  if [ -z "$death" ] && later "$(diff_s "$t" "$started")" "$start_limit"; then
    last=nodeath
    break
  fi
  sleep 0.1
done
finished=$(now)

if [ -n "$left" ]; then
  [ "$last" = nodeath ] && bad "the victim did not reach its point within $start_limit s: the job still runs" ||
    bad "processes of the job still run $(diff_s "$finished" "$death") s after the death (bound $bound s)"
  while read -r pid what; do
    echo "---- left running: pid $pid ($what)"
    ps -o pid,ppid,stat,etime,wchan:32,args -p "$pid" 2>&1 | cat
    cat "/proc/$pid/stack" 2>/dev/null
    if [ "$what" != "a process of the job" ] && command -v gdb >/dev/null; then
      timeout 10 gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' | head -120
    fi
  done <<<"$(echo "$left" | sort -un -k1,1 | head -3)"  # within ctest's time limit
  kill_left
  left=  # killed: the exit trap must not kill their pids again, which may be reused
fi

# Statuses (every process has ended or was killed by now).
if [ "$launcher" = mpiexec ]; then
  wait "$launcher_pid"
  rc[0]=$?
else
  for ((r = 0; r < n; ++r)); do
    wait "${pids[r]}"
    rc[r]=$?
  done
fi

# -- what the job said -------------------------------------------------------------
if [ "$launcher" = mpiexec ]; then
  echo "---- mpiexec (exit ${rc[0]})"
  cat "$out/mpiexec.out"
fi
for ((r = 0; r < n; ++r)); do
  if [ "$launcher" = copies ]; then
    echo "---- copy $r (exit ${rc[r]})"
    cat "$out/copy$r.out"
  fi
  echo "---- rank $r"
  cat "$out/rank.$r.out" 2>/dev/null
done
echo "----"

# -- the checks --------------------------------------------------------------------
if [ -n "$death" ]; then
  ok "rank $victim (pid $victim_pid) died $where, $died_at s after the start"
else
  bad "rank $victim never reported its death"
fi
if [ -z "$left" ] && [ -n "$death" ]; then
  for ((r = 0; r < n; ++r)); do
    [ "$r" = "$victim" ] && continue
    ok "rank $r ended ${ended[r]:-?} s after the death"
  done
  took=$(diff_s "$finished" "$death")
  later "$took" "$bound" && bad "the last process ended $took s after the death, above $bound s" ||
    ok "every process of the job ended within $took s of the death (bound $bound s)"
fi
[ -z "$left" ] && ok "no process of the job is left"

if [ "$launcher" = mpiexec ]; then
  [ "${rc[0]}" -ne 0 ] && ok "mpiexec failed (exit ${rc[0]})" || bad "mpiexec exited with 0"
  # Hydra's report: "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
  # "PID <pid> ...", "EXIT CODE: 9" (MPICH 4.0; other versions print "RANK n"
  # or "KILLED BY SIGNAL: 9"), and with -print-all-exitcodes "Exit codes:
  # [host] c0,c1,...", each rank's wait status (9: killed by SIGKILL).
  grep -q "BAD TERMINATION" "$out/mpiexec.out" && grep -Eq "(EXIT CODE|KILLED BY SIGNAL): 9|signal 9" "$out/mpiexec.out" &&
    ok "Hydra reports a process killed by signal 9" || bad "Hydra does not report a process killed by signal 9"
  codes=$(sed -n 's/.*Exit codes: //p' "$out/mpiexec.out" | sed 's/\[[^]]*\] *//g; s/ /,/g')
  code=$(echo "$codes" | cut -d, -f$((victim + 1)))
  [ "$code" = 9 ] && ok "Hydra's exit codes by rank ($codes) give rank $victim signal 9" ||
    bad "Hydra's exit codes by rank ('$codes') do not give rank $victim signal 9"
  banner=$(sed -n 's/^= *PID \([0-9]*\) .*/\1/p' "$out/mpiexec.out" | head -n 1)
  [ "$banner" = "${victim_pid:-none}" ] && ok "Hydra's banner names the victim's pid $victim_pid" ||
    echo "note: Hydra's banner names pid ${banner:-?}, not the victim's ${victim_pid:-?}: another rank with a" \
      "bad status, here one Hydra killed while cleaning up"
else
  [ "${rc[victim]}" = 137 ] && ok "the victim's status is 137 (SIGKILL)" || bad "the victim's status is ${rc[victim]}, not 137"
  case $case_name in
    rendezvous) said="rank $victim \(host [^,]*, pid ${victim_pid:-none}\) left the rendezvous at .* before every process of the job had arrived" ;;
    before_rendezvous) said="rank $victim of $n did not reach the job's rendezvous at .* within PGS_BOOTSTRAP_TIMEOUT=5 s" ;;
    *) said="rank $victim \(host [^,]*, pid ${victim_pid:-none}\) died: its connection to the job's rendezvous closed" ;;
  esac
  for ((r = 0; r < n; ++r)); do
    [ "$r" = "$victim" ] && continue
    [ "${rc[r]}" = 1 ] && ok "copy $r exited with 1" || bad "copy $r exited with ${rc[r]}, not 1"
    grep -Eq "$said" "$out/rank.$r.out" 2>/dev/null && ok "rank $r names the dead rank" ||
      bad "rank $r does not say '$said'"
  done
fi

# What each case claims to exercise.
case $case_name in
  fast | hierarchical | across)
    grep -Eq "allreduce: fast up to (1 MiB|256 KiB), hierarchical above" "$out/rank.0.out" &&
      ok "fairring's plan: 8 doubles on the fast path, 1 Mi doubles hierarchical" ||
      bad "rank 0 did not print fairring's plan with a fast path up to 1 MiB or 256 KiB"
    if [ "$case_name" = across ]; then
      grep -q "2 nodes x 2 ranks per node" "$out/rank.0.out" && ok "2 nodes x 2 ranks" || bad "not 2x2 virtual nodes"
    fi ;;
  dump)
    grep -q "inside pg_trace_dump" "$out/dead.$victim" 2>/dev/null && ok "the victim died inside a dump" ||
      bad "the victim did not die inside a dump"
    dumps=$(ls "$out/trace"/pgstrategy-*-rank*.json 2>/dev/null | wc -l)
    [ "$dumps" -eq "$n" ] && ok "every rank was dumping ($dumps dumps written)" || bad "$dumps dumps in PGS_TRACE, not $n"
    if python3 -c 'import json, sys; [json.load(open(p)) for p in sys.argv[1:]]' "$out/trace"/pgstrategy-*-rank*.json; then
      ok "every dump is whole JSON"
    else
      bad "a dump is not whole JSON"
    fi ;;
esac
echo "fault_campaign: $case_name under $launcher: $([ $failed = 0 ] && echo passed || echo FAILED)," \
  "$(diff_s "$(now)" "$started") s"
exit $failed
