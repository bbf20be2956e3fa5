"""torch's ranks must be MPI's: with torch's ranks reversed against the MPI
ranks, init_process_group("pgstrategy") fails on every rank with a message
that names both (it never runs collectives on mismatched ranks). The ranks
meet at a FileStore in a folder MPI's rank 0 made: torch's rank 0, which would
host a TCP store, is another process here."""

import shutil
import sys
import tempfile

import pgs_test  # noqa: F401  (skips without torch)
import torch.distributed as dist

try:
    import pgstrategy_torch
except ImportError as error:
    print(f"SKIP: pgstrategy_torch cannot be imported: {error}", flush=True)
    sys.exit(pgs_test.SKIP)

rank, size, _, _, folder = pgstrategy_torch._C.mpi_job(lambda: tempfile.mkdtemp(prefix="pgs-rank-check."))
c = pgs_test.Checks("test_rank_check")
c.raises(lambda: dist.init_process_group("pgstrategy", init_method=f"file://{folder}/store", rank=size - 1 - rank,
                                         world_size=size),
         f"torch's rank {size - 1 - rank} of {size} is MPI's rank {rank} of {size}", "reversed ranks")
print(f"test_rank_check (rank {rank}): {'OK' if not c.failures else 'FAILED'}", flush=True)
pgstrategy_torch._C.mpi_job("")  # every rank is done with the store
if rank == 0:
    shutil.rmtree(folder, ignore_errors=True)
sys.exit(1 if c.failures else 0)
