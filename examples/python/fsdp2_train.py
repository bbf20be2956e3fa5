"""Sharded data-parallel training (FSDP2: torch.distributed.fsdp.fully_shard)
over the torch.distributed backend "pgstrategy".

    mpiexec -n 2 python fsdp2_train.py                          # mpi underneath (CPU default)
    PGS_BACKEND=cpu:fairring mpiexec -n 4 python fsdp2_train.py  # fairring's all-gathers and reduce-scatters

Each rank holds a shard of every layer's parameters. Forward and backward
all-gather the layers' parameters and reduce-scatter their gradients (coalesced
into one collective per layer group), so every rank trains the same model on
its own batches. Prints the loss; exits 0 when the gathered parameters are the
same on every rank.
"""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import pgstrategy_torch
from rank_check import identical_on_every_rank

pgstrategy_torch.mpi_env()  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the MPI job (if unset)
dist.init_process_group("pgstrategy")
rank, size = dist.get_rank(), dist.get_world_size()
device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
mesh = init_device_mesh(device.type, (size,))

torch.manual_seed(0)  # the same initial model on every rank
model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.GELU()) for _ in range(4)], nn.Linear(256, 1)).to(device)
for block in model:
    fully_shard(block, mesh=mesh)  # each block's parameters gathered when it runs, freed after
fully_shard(model, mesh=mesh)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.Generator().manual_seed(rank)  # each rank its own data
target = torch.randn(256, 1, generator=torch.Generator().manual_seed(123))

for step in range(20):
    x = torch.randn(32, 256, generator=data)
    y = torch.tanh(x @ target)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    if rank == 0 and step % 5 == 4:
        print(f"step {step + 1}: loss {loss.item():.4f}", flush=True)

# The full parameters, gathered from the shards, are the same on every rank.
params = torch.cat([p.full_tensor().detach().flatten() for p in model.parameters()])
identical = identical_on_every_rank(params)
if rank == 0:
    print(f"{size} ranks, each holding 1/{size} of {params.numel()} parameters; identical once gathered: {identical}")
    print(f"underneath: {pgstrategy_torch.describe(device=device.type)}")
dist.destroy_process_group()
sys.exit(0 if identical else 1)
