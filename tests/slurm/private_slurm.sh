# A private single-node Slurm for tests, sourced by the scripts of this folder:
#
#   source private_slurm.sh
#   slurm_start          # munged, slurmctld and slurmd in a scratch folder;
#                        # exports SLURM_CONF; returns 77 (with the reason in
#                        # $slurm_skip) when Slurm cannot run here
#   srun -n 2 ...        # jobs go to it
#   slurm_stop           # by PID; also run by the EXIT trap slurm_start sets
#
# Nothing of the system's Slurm or munge is touched: its own munge socket, its
# own ports, state and logs in the scratch folder. The daemons run as root
# (SlurmUser=root), munged as the munge user. The node offers 2 CPUs per core
# (SlurmdParameters=config_overrides) so that 4 tasks fit on 2 cores; the
# task and process-tracking plugins are the ones that need no cgroups.

slurm_scratch=""
slurm_skip=""

slurm_start() {
  local bin
  for bin in munged slurmctld slurmd srun sbatch sinfo; do
    if ! command -v "$bin" >/dev/null && [ ! -x "/usr/sbin/$bin" ]; then
      slurm_skip="$bin not found (Debian: apt-get install slurm-wlm munge)"
      return 77
    fi
  done
  if [ "$(id -u)" -ne 0 ]; then
    slurm_skip="starting slurmd and munged needs root"
    return 77
  fi
  if ! id munge >/dev/null 2>&1; then
    slurm_skip="there is no munge user (install the munge package)"
    return 77
  fi
  export PATH="$PATH:/usr/sbin"

  slurm_scratch=$(mktemp -d /tmp/pgs-slurm.XXXXXX)
  trap slurm_stop EXIT
  local d=$slurm_scratch
  mkdir -p "$d/munge" "$d/state" "$d/spool"
  chmod 755 "$d"
  # munged insists on a key only its user can read, in a folder others can
  # enter (to reach the socket) but not write.
  dd if=/dev/urandom of="$d/munge/key" bs=1024 count=1 status=none
  chown -R munge: "$d/munge"
  chmod 755 "$d/munge"
  chmod 400 "$d/munge/key"
  if ! runuser -u munge -- munged --socket="$d/munge/socket" --key-file="$d/munge/key" \
      --pid-file="$d/munge/pid" --log-file="$d/munge/log" --seed-file="$d/munge/seed" \
      --num-threads=2; then
    slurm_skip="munged did not start: $(tail -n 3 "$d/munge/log" 2>/dev/null)"
    return 77
  fi

  # Ports of our own, so a system Slurm (or another run of this test) is not in the way.
  local port=$((20000 + ($$ % 20000) * 2))
  local cpus=$((2 * $(nproc)))
  cat >"$d/slurm.conf" <<CONF
ClusterName=pgstest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/socket
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MpiDefault=none
NodeName=pgsnode NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=pgsnode Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  export SLURM_CONF="$d/slurm.conf"
  if ! slurmctld -f "$SLURM_CONF" || ! slurmd -f "$SLURM_CONF" -N pgsnode; then
    slurm_skip="the Slurm daemons did not start: $(tail -n 3 "$d"/slurm*.log 2>/dev/null)"
    return 77
  fi
  local i state=""
  for i in $(seq 100); do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && return 0
    sleep 0.1
  done
  slurm_skip="the node never became idle (sinfo: '$state'): $(tail -n 3 "$d/slurmd.log")"
  return 77
}

slurm_stop() {
  [ -n "$slurm_scratch" ] || return 0
  local d=$slurm_scratch pidfile pid i
  for pidfile in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munge/pid"; do
    pid=$(cat "$pidfile" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null || continue
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ -n "${PGS_KEEP_SLURM_SCRATCH:-}" ]; then
    echo "slurm scratch folder kept: $d"
  else
    rm -rf "$d"
  fi
  slurm_scratch=""
}
