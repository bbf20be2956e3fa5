"""Expert parallelism over the torch.distributed backend "pgstrategy": a
mixture-of-experts layer with top-2 routing, two experts per rank, whose
tokens travel to their experts and back with uneven all_to_all_single (each
rank sends each other rank as many rows as its tokens chose that rank's
experts).

    mpiexec -n 2 python moe_train.py
    PGS_BACKEND=cpu:fairring mpiexec -n 4 python moe_train.py

The gate is replicated (its gradient is averaged with all_reduce); each expert
lives on one rank and gets the gradient of every token routed to it. Prints
the loss and how many rows each rank sent where; exits 0 when the replicated
gate is the same on every rank at the end.
"""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed._functional_collectives import all_to_all_single_autograd

import pgstrategy_torch
from rank_check import identical_on_every_rank

DIM, PER_RANK, TOP = 64, 2, 2


class MoE(nn.Module):
    def __init__(self, rank, size):
        super().__init__()
        self.rank, self.size = rank, size
        torch.manual_seed(0)  # the same gate on every rank
        self.gate = nn.Linear(DIM, size * PER_RANK, bias=False)
        torch.manual_seed(1 + rank)  # this rank's own experts
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))
                                     for _ in range(PER_RANK))

    def forward(self, x):
        world = dist.group.WORLD
        scores, chosen = self.gate(x).topk(TOP, dim=1)
        weights = scores.softmax(dim=1)
        # One row per (token, choice), ordered by the rank that holds its expert.
        expert = chosen.reshape(-1)
        token = torch.arange(x.shape[0], device=x.device).repeat_interleave(TOP)
        order = torch.argsort(expert // PER_RANK, stable=True)
        expert, token = expert[order], token[order]
        send = torch.bincount(expert // PER_RANK, minlength=self.size)
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send)  # the rows each rank will send here
        send, recv = send.tolist(), recv.tolist()
        self.sent = send
        # Dispatch: the tokens' rows and their experts' numbers to the experts' ranks.
        rows = all_to_all_single_autograd(x[token], recv, send, world)
        ids = torch.empty(sum(recv), dtype=expert.dtype, device=x.device)
        dist.all_to_all_single(ids, expert.contiguous(), recv, send)
        out = torch.zeros_like(rows)
        for k, mlp in enumerate(self.experts):
            mine = (ids == self.rank * PER_RANK + k).nonzero().squeeze(1)
            out = out.index_put((mine,), mlp(rows[mine]))
        # Combine: the results back to the tokens' ranks, weighted and summed per token.
        back = all_to_all_single_autograd(out, send, recv, world)
        return x + torch.zeros_like(x).index_add(0, token, back * weights.reshape(-1)[order].unsqueeze(1))


pgstrategy_torch.mpi_env()  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the MPI job (if unset)
dist.init_process_group("pgstrategy")
rank, size = dist.get_rank(), dist.get_world_size()
layer = MoE(rank, size)
optimizer = torch.optim.AdamW(layer.parameters(), lr=1e-3)
data = torch.Generator().manual_seed(rank)  # each rank its own tokens
target = torch.randn(DIM, DIM, generator=torch.Generator().manual_seed(123)) / DIM ** 0.5

for step in range(20):
    x = torch.randn(128 + 32 * rank, DIM, generator=data)  # a different number of tokens on each rank
    loss = nn.functional.mse_loss(layer(x), torch.tanh(x @ target))
    optimizer.zero_grad()
    loss.backward()
    for p in layer.gate.parameters():  # the replicated gate: gradients averaged over ranks
        dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
    optimizer.step()
    if rank == 0 and step % 5 == 4:
        print(f"step {step + 1}: loss {loss.item():.4f}, rank 0 sent {layer.sent} rows to ranks 0..{size - 1}",
              flush=True)

identical = identical_on_every_rank(layer.gate.weight.detach().flatten())
if rank == 0:
    print(f"{size} ranks, {size * PER_RANK} experts; the gate identical on every rank: {identical}")
    print(f"underneath: {pgstrategy_torch.describe()}")
dist.destroy_process_group()
sys.exit(0 if identical else 1)
