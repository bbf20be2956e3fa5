"""Ranks that multiprocessing forks end cleanly, the first to end included.

``torch.multiprocessing`` with ``start_method="fork"`` or ``"forkserver"`` (as
Lightning's ``ddp_fork`` and ``ddp_notebook`` start ranks) ends each rank in
``os._exit``, which skips the exit handlers where the library finalizes the
MPI it brought up. Rank 1 ends while rank 0 still runs (it sleeps after its
last call): rank 0 must not see rank 1 die. Each rank checks its allreduce
against the analytic sum; a wrong result, a rank that exits non-zero or one
that hangs fails the run (``start_processes`` raises in the parent). With
and without ``destroy_process_group``, on mpi and on fairring.

    python test_fork_start.py      (no MPI launcher: the script starts its ranks)
"""

import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import pgstrategy_torch  # registers "pgstrategy"

WORLD = 2


def rank_main(rank, store_file, destroy, backend):
    os.environ["PGS_BACKEND"] = backend
    dist.init_process_group("pgstrategy", init_method=f"file://{store_file}", rank=rank, world_size=WORLD)
    described = pgstrategy_torch.describe()
    if backend.split(":")[1] not in described:
        raise AssertionError(f"rank {rank}: asked for {backend}, got: {described}")
    values = torch.arange(1000, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(values)
    expected = torch.arange(1000, dtype=torch.float32) * sum(r + 1 for r in range(WORLD))
    if not torch.equal(values, expected):
        raise AssertionError(f"rank {rank}: allreduce gave {values[:4].tolist()}..., expected {expected[:4].tolist()}...")
    if destroy:
        dist.destroy_process_group()
    if rank == 0:
        time.sleep(2)  # rank 1 ends first


def main():
    failures = []
    for method in ("fork", "forkserver"):
        for backend in ("cpu:mpi", "cpu:fairring"):
            for destroy in (True, False):
                case = f"{method}, {backend}, {'with' if destroy else 'without'} destroy_process_group"
                with tempfile.TemporaryDirectory(prefix="pgstrategy-fork-") as folder:
                    try:
                        mp.start_processes(rank_main, args=(os.path.join(folder, "store"), destroy, backend),
                                           nprocs=WORLD, start_method=method, join=True)
                        print(f"ok: {case}", flush=True)
                    except Exception as error:  # a rank failed: its exit code and message
                        failures.append(f"{case}: {error}")
    for failure in failures:
        print(f"FAILED: {failure}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
