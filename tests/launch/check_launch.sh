#!/usr/bin/env bash
# The launch tests (label launch, docs/launch.md): jobs that no MPI launcher
# started -- plain copies with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT,
# torchrun, Lightning's own launcher -- and every bad input of the bootstrap.
#
#   check_launch.sh CASE
#
# Set by tests/launch/CMakeLists.txt: LAUNCH_JOB, DEMO (the C example), PG_TOPO, PG_BENCH,
# PYTHON (empty without torch), BUILD_PYTHONPATH, SITE (the pip-installed
# package), SCRIPTS (this folder), MPIEXEC, MPI_FLAVOR (mpich, openmpi),
# MPI4PY_ENV. Each case prints what it checked; exit 0 when all held, 77
# when the case cannot run here (and why), 1 otherwise.
set -u
case_name=$1
out=$(mktemp -d "${TMPDIR:-/tmp}/pg-launch-$case_name.XXXX")
trap 'rm -rf "$out"' EXIT
failed=0

skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }

# held_port: a port for a listener started next, held until this script ends.
. "$(dirname "${BASH_SOURCE[0]}")/../common/held_port.sh"

# copies N CMD...: N plain copies of CMD, as a Kubernetes job or a shell loop
# starts them; ENV_ALL (assignments) for every copy, ENV_<r> for copy r (an
# empty value is unset, for the library as for torch).
# Their output goes to $out/copy<r>.out (stdout and stderr), their exit
# status to rc[r]; $elapsed is the seconds until the last one ended.
declare -a rc
copies() {
  local n=$1
  shift
  local port=${PORT:-$(held_port)}
  local start=$SECONDS pids=()
  for ((r = 0; r < n; ++r)); do
    local own="ENV_$r"
    (
      env MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" WORLD_SIZE="$n" RANK="$r" LOCAL_RANK="$r" \
        LOCAL_WORLD_SIZE="$n" ${ENV_ALL:-} ${!own:-} timeout 120 "$@" >"$out/copy$r.out" 2>&1
      status=$?
      date +%s.%N >"$out/end$r"
      exit $status
    ) &
    pids+=($!)
  done
  for ((r = 0; r < n; ++r)); do
    wait "${pids[$r]}"
    rc[$r]=$?
  done
  elapsed=$((SECONDS - start))
  for ((r = 0; r < n; ++r)); do
    echo "---- copy $r (exit ${rc[$r]})"
    cat "$out/copy$r.out"
  done
}

has() { grep -q -- "$2" "$1"; }
expect() { # FILE PATTERN WHAT
  if has "$1" "$2"; then ok "$3"; else bad "$3 (no '$2' in $(basename "$1"))"; fi
}
expect_rc() { # RANK WANT WHAT: WANT is a number, or "nonzero"
  local got=${rc[$1]}
  if [ "$2" = nonzero ]; then
    [ "$got" -ne 0 ] && ok "$3 (exit $got)" || bad "$3: exit $got, expected non-zero"
  else
    [ "$got" -eq "$2" ] && ok "$3" || bad "$3: exit $got, expected $2"
  fi
}
expect_fast() { # SECONDS WHAT
  [ "$elapsed" -le "$1" ] && ok "$2 (${elapsed} s)" || bad "$2: took ${elapsed} s, more than $1"
}
ended_after_death() { # N SECONDS: every copy ended within SECONDS of the death a copy reported
  local n=$1 limit=$2 death last=0 r
  death=$(grep -ho "kills itself at [0-9.]*" "$out"/copy*.out | awk '{ print $4 }')
  [ -n "$death" ] || { bad "no copy reported its death"; return; }
  for ((r = 0; r < n; ++r)); do last=$(awk -v a="$last" -v b="$(cat "$out/end$r")" 'BEGIN { print (b > a ? b : a) }'); done
  local took
  took=$(awk -v a="$last" -v d="$death" 'BEGIN { printf "%.2f", a - d }')
  awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t <= l) }' && ok "every copy ended $took s after the death" ||
    bad "the last copy ended $took s after the death, more than $limit s"
}

needs_bootstrap() {
  [ "$MPI_FLAVOR" = mpich ] ||
    skip "the bootstrap serves MPICH-family MPIs; this build uses Open MPI, which it refuses (case openmpi_refused)"
}
needs_torch() {
  needs_bootstrap
  [ -n "$PYTHON" ] || skip "the build found no torch (scripts/setup-python.sh makes a venv with it)"
}

torchrun() { # NPROC ARGS...: torchrun on this host; its agent's store listens on a
  # port the system gives it (one node, no --master-port: torch's c10d rendezvous
  # at localhost:0), which the workers get as MASTER_PORT
  local n=$1
  shift
  local start=$SECONDS
  env PYTHONPATH="$BUILD_PYTHONPATH" OMP_NUM_THREADS=1 timeout 300 "$PYTHON" -m torch.distributed.run \
    --nnodes 1 --nproc-per-node "$n" "$@" >"$out/torchrun.out" 2>&1
  rc[0]=$?
  elapsed=$((SECONDS - start))
  cat "$out/torchrun.out"
}

lightning() { # PYTHONPATH ARGS...
  local path=$1
  shift
  local start=$SECONDS
  env PYTHONPATH="$path" MASTER_PORT="$(held_port)" OMP_NUM_THREADS=1 $MPI4PY_ENV timeout 300 "$PYTHON" \
    "$SCRIPTS/lightning_job.py" "$@" >"$out/lightning.out" 2>&1
  rc[0]=$?
  elapsed=$((SECONDS - start))
  cat "$out/lightning.out"
}

case $case_name in
  # -- plain copies: the C example and the test job, as 2 and 3 copies --------
  demo2 | demo3)
    needs_bootstrap
    n=${case_name#demo}
    copies "$n" "$DEMO" 1000 100000
    for ((r = 0; r < n; ++r)); do expect_rc $r 0 "copy $r of the C example"; done
    expect "$out/copy0.out" "over $n ranks" "one job of $n ranks"
    expect "$out/copy0.out" "^OK" "every result right" ;;
  job2 | job3)
    needs_bootstrap
    n=${case_name#job}
    copies "$n" "$LAUNCH_JOB"
    for ((r = 0; r < n; ++r)); do
      expect_rc $r 0 "copy $r"
      expect "$out/copy$r.out" "rank $r of $n, node 0 of 1, backend mpi: OK" "copy $r is rank $r of $n, node-local"
    done ;;
  debug_log)
    needs_bootstrap
    # Every PMI line logged, also the relay's answer to MPI_Finalize's (once
    # an abort in MPI: the log asked MPI for the rank of a world it was ending).
    ENV_ALL="PGS_LOG=debug" copies 2 "$LAUNCH_JOB"
    for r in 0 1; do
      expect_rc $r 0 "copy $r succeeds"
      expect "$out/copy$r.out" "^\[pgstrategy $r\] debug: bootstrap: PMI line from MPI: cmd=finalize" "copy $r logs MPI's finalize"
    done
    expect "$out/copy0.out" "rendezvous at .* sent [0-9]* bytes to the job's 2 processes, answering [0-9]* PMI gets" \
      "rank 0 says what its rendezvous sent" ;;
  fairring3)
    needs_bootstrap
    ENV_ALL="PGS_BACKEND=cpu:fairring PGS_FAIRRING_MIN_BYTES=0" copies 3 "$LAUNCH_JOB"
    for ((r = 0; r < 3; ++r)); do expect "$out/copy$r.out" "rank $r of 3, .*backend fairring: OK" "fairring on copy $r"; done ;;
  tools)
    needs_bootstrap
    # The tools call pg_mpi_init instead of MPI_Init_thread: they run as plain copies too.
    copies 2 "$PG_TOPO"
    expect "$out/copy0.out" "rank 1: .* launcher=torchrun rank 1/2 local 1/2; MPI brought up by pgstrategy's bootstrap (rank 1 of 2" \
      "pg-topo: rank 1 says how MPI came up"
    expect "$out/copy0.out" "plan: 1 node x 2 ranks per node" "pg-topo: one node of 2"
    expect_rc 0 0 "pg-topo succeeds"
    copies 2 "$PG_BENCH" -b 8 -e 64K -f 8 -n 5 -w 2 -B mpi,fairring
    expect "$out/copy0.out" "32768 .* fairring " "pg-bench's rows up to 32 KiB, fairring's among them"
    expect_rc 0 0 "pg-bench succeeds (every result checked)"
    expect_rc 1 0 "pg-bench's rank 1 succeeds" ;;
  # -- bad input ---------------------------------------------------------------
  missing_rank)
    needs_bootstrap
    # 3 expected, 2 started: both fail naming rank 2, after PGS_BOOTSTRAP_TIMEOUT.
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=2" ENV_0="WORLD_SIZE=3" ENV_1="WORLD_SIZE=3" copies 2 "$LAUNCH_JOB"
    for r in 0 1; do
      expect_rc $r 1 "copy $r fails"
      expect "$out/copy$r.out" "PG_ERR_TIMEOUT: rank $r of 3: rank 2 of 3 did not reach the job's rendezvous at MASTER_ADDR:MASTER_PORT=127.0.0.1:[0-9]* within PGS_BOOTSTRAP_TIMEOUT=2 s (2 did)" \
        "copy $r names the missing rank"
    done
    expect_fast 15 "no hang" ;;
  port_in_use)
    needs_bootstrap
    # Another program listens on the port (it took one of the system's choosing).
    python3 -c "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(30)" >"$out/listener" &
    holder=$!
    while [ ! -s "$out/listener" ]; do sleep 0.05; done
    PORT=$(cat "$out/listener")
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=3" PORT=$PORT copies 2 "$LAUNCH_JOB"
    kill $holder
    expect "$out/copy0.out" "MASTER_ADDR:MASTER_PORT=127.0.0.1:$PORT: the port $PORT is already in use" "rank 0 names the port in use"
    expect "$out/copy1.out" "what answered at MASTER_ADDR:MASTER_PORT=127.0.0.1:$PORT is not pgstrategy's rendezvous" \
      "rank 1 says what answered is not the rendezvous"
    expect_rc 0 1 "rank 0 fails"
    expect_rc 1 1 "rank 1 fails" ;;
  held_port)
    needs_bootstrap
    # The port handed to the copies stays this script's until rank 0 listens on
    # it: another process's bind of it fails meanwhile, and the job runs on it.
    PORT=$(held_port)
    if python3 -c "import socket; socket.socket().bind(('127.0.0.1', $PORT))" 2>"$out/bind.err"; then
      bad "another process bound port $PORT, handed to the copies, before they started"
    else
      ok "port $PORT stays held until rank 0 listens: $(tail -n 1 "$out/bind.err")"
    fi
    PORT=$PORT copies 2 "$LAUNCH_JOB"
    for r in 0 1; do
      expect_rc $r 0 "copy $r"
      expect "$out/copy$r.out" "rank $r of 2, node 0 of 1, backend mpi: OK" "copy $r runs on the held port"
    done ;;
  size_mismatch)
    needs_bootstrap
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=5" ENV_1="WORLD_SIZE=3" copies 2 "$LAUNCH_JOB"
    for r in 0 1; do
      expect "$out/copy$r.out" "has WORLD_SIZE=3, rank 0 has WORLD_SIZE=2" "copy $r names both WORLD_SIZE values"
      expect_rc $r 1 "copy $r fails"
    done
    expect_fast 10 "at once, not after the timeout" ;;
  duplicate_rank)
    needs_bootstrap
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=5 WORLD_SIZE=3" ENV_2="RANK=1" copies 3 "$LAUNCH_JOB"
    for r in 0 1 2; do
      expect "$out/copy$r.out" "two processes claim RANK=1: pid [0-9]* on host .* and pid [0-9]*" "copy $r names the duplicated RANK"
      expect_rc $r 1 "copy $r fails"
    done ;;
  bad_rank)
    needs_bootstrap
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=2" ENV_1="RANK=1x" copies 2 "$LAUNCH_JOB"
    expect "$out/copy1.out" "RANK='1x' is not valid: expected a non-negative integer" "the malformed RANK is named"
    expect "$out/copy0.out" "rank 1 of 2 did not reach" "rank 0 names the rank that never came"
    ENV_0="RANK=2" copies 1 "$LAUNCH_JOB"
    expect "$out/copy0.out" "RANK=2 is not valid: it must be below WORLD_SIZE=1" "a RANK beyond WORLD_SIZE is named"
    ENV_0="WORLD_SIZE=0" copies 1 "$LAUNCH_JOB"
    expect "$out/copy0.out" "WORLD_SIZE='0' is not valid: expected a positive integer" "WORLD_SIZE=0 is named"
    ENV_0="MASTER_PORT=70000" ENV_1="MASTER_PORT=70000" copies 2 "$LAUNCH_JOB"
    expect "$out/copy0.out" "MASTER_PORT='70000' is not valid: expected a port number" "a bad MASTER_PORT is named"
    ENV_ALL="MASTER_ADDR=" copies 2 "$LAUNCH_JOB"
    expect "$out/copy1.out" "MASTER_ADDR is unset" "a missing MASTER_ADDR is named"
    ENV_ALL="RANK=" copies 2 "$LAUNCH_JOB"
    expect "$out/copy0.out" "WORLD_SIZE=2 says this process is one of 2, but RANK is unset" "a missing RANK is named"
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=-1" copies 2 "$LAUNCH_JOB"
    expect "$out/copy0.out" "PGS_BOOTSTRAP_TIMEOUT='-1' is not valid" "a bad PGS_BOOTSTRAP_TIMEOUT is named" ;;
  wrong_secret)
    needs_bootstrap
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=3" ENV_0="PGS_BOOTSTRAP_SECRET=job-secret-0123456789" \
      ENV_1="PGS_BOOTSTRAP_SECRET=other-secret-012345678" copies 2 "$LAUNCH_JOB"
    expect "$out/copy1.out" "refused this process: it does not hold the job's secret" "the stranger is told it was refused"
    expect "$out/copy0.out" "refused a connection from 127.0.0.1:[0-9]* .*: it did not prove the job's secret" \
      "rank 0 logs the refused connection"
    expect "$out/copy0.out" "rank 1 of 2 did not reach" "the job then lacks rank 1"
    ENV_ALL="PGS_BOOTSTRAP_SECRET=short" copies 2 "$LAUNCH_JOB"
    expect "$out/copy0.out" "PGS_BOOTSTRAP_SECRET is not valid (5 characters)" "a short secret is refused, unrepeated" ;;
  no_secret)
    needs_bootstrap
    # Without PGS_BOOTSTRAP_SECRET, a rendezvous other machines reach warns at
    # the default PGS_LOG, saying how to set one; on loopback, or with a
    # secret, nothing is said.
    warning="the rendezvous at MASTER_ADDR:MASTER_PORT=0.0.0.0:[0-9]* is reachable from other machines and there is no PGS_BOOTSTRAP_SECRET: .*export PGS_BOOTSTRAP_SECRET=\$(openssl rand -hex 32)"
    unset PGS_LOG
    ENV_ALL="MASTER_ADDR=0.0.0.0" copies 2 "$LAUNCH_JOB"
    expect_rc 0 0 "the job runs (rank 0)"
    expect_rc 1 0 "the job runs (rank 1)"
    expect "$out/copy0.out" "^\[pgstrategy 0\] warn: bootstrap: $warning" "rank 0 warns on every address, at the default log level"
    has "$out/copy1.out" "PGS_BOOTSTRAP_SECRET" && bad "rank 1 repeats the warning" || ok "rank 1 does not repeat it"
    ENV_ALL="MASTER_ADDR=0.0.0.0 PGS_BOOTSTRAP_SECRET=job-secret-0123456789" copies 2 "$LAUNCH_JOB"
    expect_rc 0 0 "with a secret, the job runs"
    has "$out/copy0.out" "PGS_BOOTSTRAP_SECRET" && bad "rank 0 warns although a secret is set" || ok "no warning with a secret"
    copies 2 "$LAUNCH_JOB"
    expect_rc 0 0 "on loopback, the job runs"
    has "$out/copy0.out" "PGS_BOOTSTRAP_SECRET" && bad "rank 0 warns on loopback" || ok "no warning on loopback" ;;
  stranger)
    needs_bootstrap
    # Garbage, a silent connection and an oversized frame at the rendezvous
    # while the job gathers: each dropped and logged, and the job still forms.
    PORT=$(held_port)
    (
      sleep 1
      python3 - "$PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
for payload in (b"GET / HTTP/1.0\r\n\r\n", b"\xff\xff\xff\xff" + b"x" * 64, b"\x00\x00\x00\x05JOIN!"):
    s = socket.create_connection(("127.0.0.1", port))
    s.recv(4096)
    s.sendall(payload)
    time.sleep(0.2)
    s.close()
PY
    ) &
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=20" ENV_1="SLEEP=2" PORT=$PORT copies 2 sh -c 'sleep ${SLEEP:-0}; exec "$0"' "$LAUNCH_JOB"
    wait
    expect "$out/copy0.out" "refused a connection from 127.0.0.1" "strangers are logged"
    expect_rc 0 0 "the job forms anyway (rank 0)"
    expect_rc 1 0 "the job forms anyway (rank 1)" ;;
  # -- a rank that dies, an abort ------------------------------------------------
  dead_rank | dead_rank_watchdog | dead_rank_forked)
    needs_bootstrap
    [ "$case_name" = dead_rank_watchdog ] && ENV_ALL="PGS_TIMEOUT=60" || ENV_ALL=""
    # forked: every rank has a child (a data loader's worker) holding copies of its sockets.
    [ "$case_name" = dead_rank_forked ] && extra=(--fork) || extra=()
    ENV_ALL=$ENV_ALL copies 3 "$LAUNCH_JOB" --die 1 "${extra[@]}"
    expect_rc 1 137 "rank 1 was killed"
    for r in 0 2; do
      expect "$out/copy$r.out" "rank 1 (host .*, pid [0-9]*) died: its connection to the job's rendezvous closed" \
        "rank $r names the dead rank"
      expect_rc $r 1 "rank $r ends"
    done
    ended_after_death 3 3 ;;
  dead_rank0)
    needs_bootstrap
    copies 2 "$LAUNCH_JOB" --die 0
    expect "$out/copy1.out" "rank 0 (host .*), which serves the job's rendezvous at 127.0.0.1:[0-9]*, died" "rank 1 names rank 0"
    expect_rc 1 1 "rank 1 ends"
    ended_after_death 2 3 ;;
  abort)
    needs_bootstrap
    copies 3 "$LAUNCH_JOB" --abort 2
    for r in 0 1; do
      expect "$out/copy$r.out" "rank 2 (host .*) called MPI_Abort (exit code 7)" "rank $r names the abort"
      expect_rc $r 7 "rank $r ends with the abort's code"
    done
    expect_fast 10 "the job ends within seconds" ;;
  mpi_first)
    needs_bootstrap
    # The application initialized MPI itself: a world of 1 while WORLD_SIZE says 2 is an error.
    copies 2 "$LAUNCH_JOB" --mpi-first
    for r in 0 1; do
      expect "$out/copy$r.out" "PG_ERR_STATE: MPI sees a world of 1 process, but the launcher (torchrun) started 2 processes" \
        "copy $r: a world of 1 is an error"
      expect_rc $r 1 "copy $r fails"
    done ;;
  openmpi_refused)
    [ "$MPI_FLAVOR" = openmpi ] || skip "this build uses MPICH, which the bootstrap serves (the other cases)"
    ENV_ALL="PGS_BOOTSTRAP_TIMEOUT=5" copies 2 "$LAUNCH_JOB"
    for r in 0 1; do
      expect "$out/copy$r.out" "built against Open MPI, which it cannot bring up itself.*mpirun -n 2" "copy $r names mpirun"
      expect_rc $r 1 "copy $r fails at once"
    done ;;
  mpiexec)
    # The usual launcher, unchanged (RANK/WORLD_SIZE set too: mpiexec's job wins).
    env RANK=0 WORLD_SIZE=7 timeout 120 "$MPIEXEC" -n 2 "$LAUNCH_JOB" >"$out/mpiexec.out" 2>&1
    rc[0]=$?
    cat "$out/mpiexec.out"
    elapsed=0
    expect "$out/mpiexec.out" "rank 1 of 2, node 0 of 1, backend mpi: OK" "mpiexec's job, whatever RANK/WORLD_SIZE say"
    expect_rc 0 0 "mpiexec succeeds"
    ;;
  # -- torchrun ------------------------------------------------------------------
  torchrun1 | torchrun2 | torchrun3)
    needs_torch
    n=${case_name#torchrun}
    torchrun "$n" "$SCRIPTS/torch_job.py"
    expect_rc 0 0 "torchrun succeeds"
    for ((r = 0; r < n; ++r)); do
      expect "$out/torchrun.out" "torch_job: rank $r of $n, backend 'mpi' (device default): OK" "rank $r of $n"
    done ;;
  torchrun_fairring)
    needs_torch
    PGS_BACKEND=cpu:fairring PGS_FAIRRING_MIN_BYTES=0 torchrun 3 "$SCRIPTS/torch_job.py"
    expect_rc 0 0 "torchrun succeeds"
    for r in 0 1 2; do expect "$out/torchrun.out" "torch_job: rank $r of 3, backend 'fairring' (PGS_BACKEND): OK" "fairring on rank $r"; done ;;
  torchrun_dead_rank)
    needs_torch
    # torchrun's own monitor looks every 5 s here: the bootstrap must end the others first.
    torchrun 3 --monitor-interval 5 "$SCRIPTS/torch_job.py" --die 1
    for r in 0 2; do
      expect "$out/torchrun.out" "\[pgstrategy $r\] error: rank 1 (host .*, pid [0-9]*) died: its connection to the job's rendezvous closed" \
        "rank $r names the dead rank"
    done
    expect_rc 0 nonzero "torchrun reports the failure"
    expect_fast 60 "the job ends" ;;
  torchrun_no_python)
    needs_torch
    # The C job under torchrun: MASTER_PORT is the agent's store, where rank 0
    # publishes its rendezvous; or the copies meet at PGS_BOOTSTRAP_ADDR.
    torchrun 3 --no-python "$LAUNCH_JOB"
    expect_rc 0 0 "torchrun --no-python succeeds (through the agent's store)"
    for r in 0 1 2; do expect "$out/torchrun.out" "launch_job: rank $r of 3, node 0 of 1, backend mpi: OK" "rank $r"; done
    PGS_BOOTSTRAP_ADDR=127.0.0.1:$(held_port) torchrun 2 --no-python "$LAUNCH_JOB"
    expect_rc 0 0 "torchrun --no-python succeeds (PGS_BOOTSTRAP_ADDR)"
    for r in 0 1; do expect "$out/torchrun.out" "launch_job: rank $r of 2, node 0 of 1, backend mpi: OK" "rank $r"; done ;;
  torchrun_bundled)
    needs_torch
    # The package pip built with libpgstrategy inside (launch.pip_bundled), alone on the path.
    [ -f "$SITE/pgstrategy_torch/libpgstrategy.so" ] || { bad "no libpgstrategy.so in $SITE/pgstrategy_torch"; exit 1; }
    BUILD_PYTHONPATH=$SITE torchrun 2 "$SCRIPTS/torch_job.py"
    expect_rc 0 0 "torchrun succeeds with the bundled library"
    for r in 0 1; do expect "$out/torchrun.out" "torch_job: rank $r of 2, backend 'mpi' (device default): OK" "rank $r"; done
    env PYTHONPATH="$SITE" "$PYTHON" -c "import pgstrategy_torch
print(next(l.split()[-1] for l in open('/proc/self/maps') if 'libpgstrategy' in l))" >"$out/which" 2>&1
    cat "$out/which"
    expect "$out/which" "^$SITE/pgstrategy_torch/libpgstrategy.so$" "the module loads the library beside it" ;;
  # -- Lightning's own launcher ----------------------------------------------------
  lightning_mpi4py | lightning_no_mpi4py)
    needs_torch
    [ "$case_name" = lightning_no_mpi4py ] && args=(--no-mpi4py) || args=()
    lightning "$BUILD_PYTHONPATH" "${args[@]}"
    expect_rc 0 0 "python lightning_job.py succeeds"
    for r in 0 1; do expect "$out/lightning.out" "lightning_job: rank $r of 2: OK" "rank $r of 2"; done ;;
  lightning_entry_point)
    needs_torch
    # Without 'import pgstrategy_torch': the backend comes through its entry point,
    # too late to keep Lightning's MPI detection quiet when mpi4py is installed.
    lightning "$SITE" --no-import --no-mpi4py
    expect_rc 0 0 "without mpi4py: works through the entry point"
    for r in 0 1; do expect "$out/lightning.out" "lightning_job: rank $r of 2: OK" "rank $r of 2"; done
    lightning "$SITE" --no-import
    expect "$out/lightning.out" "MPI was initialized as a 1-process job before the 'pgstrategy' backend could bring this job's 2 processes.*mpi4py initialized it.*Fix: 'import pgstrategy_torch'" \
      "with mpi4py: the error names the cause and the one-line fix"
    expect_rc 0 nonzero "with mpi4py: fails" ;;
  lightning_dead_rank)
    needs_torch
    lightning "$BUILD_PYTHONPATH" --die 1
    expect "$out/lightning.out" "rank 1 (host .*, pid [0-9]*) died" "the dead rank is named"
    expect_rc 0 nonzero "the job fails"
    expect_fast 120 "the job ends" ;;
  *)
    echo "unknown case $case_name"
    exit 2 ;;
esac
exit $failed
