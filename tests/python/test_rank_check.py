"""torch's ranks must be MPI's: with RANK reversed against the MPI ranks,
init_process_group("pgstrategy") fails on every rank with a message that
names both (it never runs collectives on mismatched ranks)."""

import os
import sys

import pgs_test  # noqa: F401  (skips without torch)
import torch.distributed as dist

try:
    import pgstrategy_torch
except ImportError as error:
    print(f"SKIP: pgstrategy_torch cannot be imported: {error}", flush=True)
    sys.exit(pgs_test.SKIP)

rank, size, _, _, _ = pgstrategy_torch._C.mpi_job("")
os.environ["RANK"], os.environ["WORLD_SIZE"] = str(size - 1 - rank), str(size)
c = pgs_test.Checks("test_rank_check")
c.raises(lambda: dist.init_process_group("pgstrategy"),
         f"torch's rank {size - 1 - rank} of {size} is MPI's rank {rank} of {size}", "reversed ranks")
print(f"test_rank_check (rank {rank}): {'OK' if not c.failures else 'FAILED'}", flush=True)
sys.exit(1 if c.failures else 0)
