"""Data-parallel training over the torch.distributed backend "pgstrategy".

    torchrun --nproc-per-node 4 ddp_train.py                  # MPI brought up by the library itself
    mpiexec -n 4 python ddp_train.py                          # mpi underneath (CPU default)
    PGS_BACKEND=cpu:fairring mpiexec -n 4 python ddp_train.py  # another algorithm, same code
    srun --mpi=pmi2 -n 4 python ddp_train.py                   # under Slurm
    PGS_TRACE=/tmp/trace mpiexec -n 4 python ddp_train.py      # flight recorder: then pg-trace /tmp/trace

Each rank trains on its own batches; DDP averages the gradients, so every
rank ends with the same model. Prints the loss and what ran underneath.
"""

import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import pgstrategy_torch
from rank_check import identical_on_every_rank

pgstrategy_torch.mpi_env()  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the MPI job (if unset)
dist.init_process_group("pgstrategy")
rank, size = dist.get_rank(), dist.get_world_size()
device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")

torch.manual_seed(0)  # the same initial model on every rank
model = DistributedDataParallel(
    nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)).to(device),
    device_ids=[device.index] if device.type == "cuda" else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.Generator().manual_seed(rank)  # each rank its own data
target = torch.randn(32, 1, generator=torch.Generator().manual_seed(123))

for step in range(20):
    x = torch.randn(64, 32, generator=data)
    y = x @ target
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    if rank == 0 and step % 5 == 4:
        print(f"step {step + 1}: loss {loss.item():.4f}", flush=True)

# Every rank holds the same parameters.
identical = identical_on_every_rank(torch.cat([p.detach().flatten() for p in model.parameters()]))
if rank == 0:
    print(f"{size} ranks, parameters identical on every rank: {identical}")
    print(f"underneath: {pgstrategy_torch.describe(device=device.type)}")
# With PGS_TRACE=DIR every rank writes its last operations to
# DIR/pgstrategy-<job>-rank<R>.json (at destroy and exit; a hang's watchdog,
# SIGUSR1 or pgstrategy_torch.dump_trace() write them too); pg-trace DIR reads them.
if rank == 0 and os.environ.get("PGS_TRACE"):
    print(f"flight recorder: dumps in {os.environ['PGS_TRACE']}; read them with: pg-trace {os.environ['PGS_TRACE']}")
dist.destroy_process_group()
sys.exit(0 if identical else 1)
