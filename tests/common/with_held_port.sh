#!/usr/bin/env bash
# with_held_port.sh COMMAND...: runs COMMAND with MASTER_ADDR=127.0.0.1 and
# MASTER_PORT (and Lightning's STANDALONE_PORT, which its MPIEnvironment takes
# instead of a port it finds free) set to a port held for it (held_port.sh)
# until COMMAND ends: for a job whose rank 0 listens there without
# pgstrategy_torch.mpi_env (torch's entry point, Lightning under mpiexec).
. "$(dirname "${BASH_SOURCE[0]}")/held_port.sh"
port=$(held_port)
# exec: COMMAND keeps this process's id, which the holder watches.
MASTER_ADDR=127.0.0.1 MASTER_PORT=$port STANDALONE_PORT=$port exec "$@"
