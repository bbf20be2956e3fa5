"""FSDP2 (torch.distributed.fsdp.fully_shard) through the "pgstrategy" backend:
an MLP trained in float64 for a few steps, each rank on its own batch, against
the same model trained on one process on the concatenated batches; every
parameter within 1e-9 of the reference and identical on every rank."""

import sys

import torch
import torch.distributed as dist
from torch import nn

import pgs_test

STEPS, BATCH, WIDTH = 4, 6, 24


def make_model():
    torch.manual_seed(7)  # the same initial weights everywhere, the reference included
    return nn.Sequential(nn.Linear(10, WIDTH), nn.Tanh(), nn.Linear(WIDTH, WIDTH), nn.Tanh(),
                         nn.Linear(WIDTH, 3)).double()


def batches(size):
    """Every rank's batch for every step (the same data on every rank)."""
    g = torch.Generator().manual_seed(11)
    return [(torch.randn(size * BATCH, 10, generator=g, dtype=torch.float64),
             torch.randn(size * BATCH, 3, generator=g, dtype=torch.float64)) for _ in range(STEPS)]


def reference(size):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches(size):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def main():
    pgs_test.start()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    rank, size = dist.get_rank(), dist.get_world_size()
    c = pgs_test.Checks(f"test_fsdp on {size} ranks")

    def train(c):
        mesh = init_device_mesh("cpu", (size,))
        model = make_model()
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in batches(size):
            mine = slice(rank * BATCH, (rank + 1) * BATCH)
            opt.zero_grad()
            nn.functional.mse_loss(model(x[mine]), y[mine]).backward()
            opt.step()
        # The full parameters, gathered from the shards.
        trained = [p.full_tensor().detach() for p in model.parameters()]
        for k, (got, want) in enumerate(zip(trained, reference(size))):
            err = (got - want).abs().max().item()
            c.check(err <= 1e-9, f"parameter {k}: {err:.3g} from the single-process reference")
            everyone = [torch.empty_like(got) for _ in range(size)]
            dist.all_gather(everyone, got)
            c.check(all(torch.equal(e, got) for e in everyone), f"parameter {k} differs between ranks")

    c.run(train)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
