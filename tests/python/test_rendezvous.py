"""torch's rendezvous under mpiexec (pgstrategy_torch.mpi_env, MASTER_PORT
unset): the port mpi_env hands torch is one rank 0 already listens on (a TCP
store it opened on a port the system chose), so no other process can take it
between the pick and torch's bind (EADDRINUSE on a busy machine); rank 0's
init_process_group then shares that store, and an all_reduce checks the group.

    mpiexec -n 2 python test_rendezvous.py
"""

import errno
import os
import socket
import sys

import pgs_test
import torch
import torch.distributed as dist

try:
    import pgstrategy_torch
except ImportError as error:
    print(f"SKIP: pgstrategy_torch cannot be imported: {error}", flush=True)
    sys.exit(pgs_test.SKIP)

c = pgs_test.Checks("test_rendezvous")
for name in ("MASTER_ADDR", "MASTER_PORT"):
    os.environ.pop(name, None)  # mpi_env's own choice is under test
values = pgstrategy_torch.mpi_env()
port = int(values["MASTER_PORT"])
if values["RANK"] == "0":
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            bound = "bound it"
        except OSError as error:
            bound = errno.errorcode.get(error.errno, str(error))
    c.check(bound == "EADDRINUSE", f"MASTER_PORT={port} is taken when mpi_env returns (another bind: {bound})")
    with socket.socket() as s:
        c.check(s.connect_ex(("127.0.0.1", port)) == 0, f"something listens on MASTER_PORT={port}")
pgs_test.start()  # (mpi_env again: every variable is set now) init_process_group on that port
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.full((4,), float(rank + 1))
dist.all_reduce(t)
c.equal(t, torch.full((4,), float(size * (size + 1) // 2)), "an all_reduce over the group")
sys.exit(c.finish())
