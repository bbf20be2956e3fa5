# held_port: prints a port for a listener the caller starts next (rank 0's
# rendezvous under plain copies, PGS_BOOTSTRAP_ADDR, torch's store at
# MASTER_PORT). Sourced by bash scripts (tests/launch/check_launch.sh,
# tests/faults/fault_campaign.sh, tools/pg-bench/compare/launch.sh).
#
# The system picks the port (a bind to port 0), and a process started here
# keeps it bound, not listening, until the script that sourced this ends, so
# that nothing the system hands ports to meanwhile (another job's pick, a
# connection's own port) takes it before the listener binds it: a port merely
# free when picked was taken before use on a busy machine (EADDRINUSE). The
# listener shares it: a socket with SO_REUSEADDR, which the library's
# rendezvous and torch's store set, may bind a port that another one holds
# without listening on it (Linux); a bind without it fails meanwhile.
held_port() {
  local file holder
  file=$(mktemp "${TMPDIR:-/tmp}/pg-held-port.XXXX")
  python3 - "$file" $$ >/dev/null <<'PY' &
import os, socket, sys, time
file, script = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
with open(file + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(file + ".tmp", file)
while os.path.exists(f"/proc/{script}"):  # held while the script runs
    time.sleep(0.2)
os.remove(file)
PY
  holder=$!
  while [ ! -s "$file" ] && kill -0 "$holder" 2>/dev/null; do sleep 0.05; done
  cat "$file"
}
