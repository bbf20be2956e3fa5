"""DDP over "pgstrategy" with mpi, fairring and the gloo plugin underneath,
against torch's own gloo in the same run: after a few steps the parameters
are identical on every rank and equal, within float rounding, to gloo's.
The test sets PGS_RANKS_PER_NODE=1 (every rank a virtual node of its own) and
PGS_FAIRRING_MIN_BYTES=0, so fairring runs its hierarchical path."""

import os
import sys

import pgs_test
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

STEPS = 4


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def new_model():
    torch.manual_seed(0)  # the same initial model everywhere
    return nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4))


def train(group, rank):
    model = new_model()
    # Small buckets: several allreduces in flight at once, completed through their futures.
    ddp = DistributedDataParallel(model, process_group=group, bucket_cap_mb=0.01)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
    for _ in range(STEPS):
        x, y = torch.randn(8, 16, generator=data), torch.randn(8, 4, generator=data)
        optimizer.zero_grad()
        ((ddp(x) - y) ** 2).mean().backward()
        optimizer.step()
    return flat(model)


def main():
    pgstrategy_torch = pgs_test.start()
    rank, size = dist.get_rank(), dist.get_world_size()
    c = pgs_test.Checks(f"test_ddp ({size} ranks)")
    gloo = dist.new_group(backend="gloo")
    reference = train(gloo, rank)
    c.check(not torch.allclose(reference, flat(new_model())), "training changed the parameters")
    backends = ["mpi", "fairring"] + (["gloo"] if os.environ.get("PGS_TEST_GLOO") == "1" else [])
    # (backend, PGS_BACKEND): chosen by the group's options, or by the variable alone
    for name, variable in [(b, None) for b in backends] + [("fairring", "cpu:fairring")]:
        if variable:
            os.environ["PGS_BACKEND"] = variable  # read when the group's strategy is made
            group = dist.new_group(backend="pgstrategy")
            del os.environ["PGS_BACKEND"]
        else:
            group = dist.new_group(backend="pgstrategy", pg_options=pgstrategy_torch.Options(backend=name))
        described = pgstrategy_torch.describe(group)
        rule = "(PGS_BACKEND)" if variable else "(argument)"
        c.check(f"backend '{name}' {rule}" in described, f"{name}: the group runs {described}")
        params = train(group, rank)
        everyone = [torch.empty_like(params) for _ in range(size)]
        dist.all_gather(everyone, params, group=gloo)  # checked through torch's own gloo
        c.check(all(torch.equal(p, everyone[0]) for p in everyone), f"{name}: parameters identical on every rank")
        diff = (params - reference).abs().max().item()
        c.check(torch.allclose(params, reference, rtol=1e-5, atol=1e-6),
                f"{name}: parameters equal torch gloo's within 1e-6 (largest difference {diff:g})")
        dist.destroy_process_group(group)
    # the default group (the mpi backend) too
    params = train(None, rank)
    c.check(torch.allclose(params, reference, rtol=1e-5, atol=1e-6), "the default group: parameters equal gloo's")
    dist.destroy_process_group(gloo)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
