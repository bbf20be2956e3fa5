"""Tensors from the backend (allocateTensor), on fairring at 2 ranks with the
flight recorder on (PGS_TRACE): what FSDP2 uses when told to take its staging
buffers from the group (set_allocate_memory_from_process_group_for_comm).

  direct   supports_tensor_alloc on CPU; an all_reduce in place on a tensor
           from allocate_tensor, whose buffer fairring reads in place (the
           recorder's "shared": "send,recv"); a freed tensor's buffer serves
           the next of its size; rank 0 keeps a tensor that rank 1 frees, and
           the next allocation still matches on both (they agree to grow)
  too_big  a size whose bytes overflow (2^62 float64 elements) or a negative
           one raises, naming the values, on every rank and before any
           collective
  fsdp2    FSDP2 with the group's memory trains as test_fsdp.py's reference
           says (1e-9), and its all-gathers and reduce-scatters read the
           group's buffers in place

    PGS_BACKEND=cpu:fairring PGS_FAIRRING_MIN_BYTES=0 PGS_FAIRRING_FAST_BYTES=0 \
        PGS_TRACE=<folder> mpiexec -n 2 python test_alloc.py

(the fast path, which takes small messages through its own slots, is off: the
model's messages are small)
"""

import gc
import glob
import json
import os
import sys

import pgs_test
import torch
import torch.distributed as dist
from torch import nn

pgs_test.start()
import pgstrategy_torch  # noqa: E402  (after the skip)
import test_fsdp  # noqa: E402  (its model, batches and single-process reference)

c = pgs_test.Checks("test_alloc")
rank, size = dist.get_rank(), dist.get_world_size()
folder = pgs_test.trace_folder()
N = 1 << 20  # 4 MiB of float32: fairring's hierarchical schedule


def direct(c):
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    c.check(backend.supports_tensor_alloc(torch.device("cpu")), "supports_tensor_alloc on CPU")
    t = backend.allocate_tensor(N, dtype=torch.float32, device=torch.device("cpu"))
    c.check(t.shape == (N,) and t.dtype == torch.float32, f"allocate_tensor's tensor: {t.shape} {t.dtype}")
    t.fill_(rank + 1.0)
    dist.all_reduce(t)
    c.equal(t, torch.full((N,), float(size * (size + 1) // 2)), "all_reduce on the group's memory")
    first = t.data_ptr()
    del t
    again = backend.allocate_tensor(N, dtype=torch.float32, device=torch.device("cpu"))
    c.check(again.data_ptr() == first, "a freed tensor's buffer serves the next of its size")
    kept = again if rank == 0 else None  # rank 1 frees it, rank 0 does not
    del again
    u = backend.allocate_tensor(N, dtype=torch.float32, device=torch.device("cpu"))
    c.check(kept is None or u.data_ptr() != kept.data_ptr(), "a kept tensor's buffer is not handed out twice")
    u.fill_(float(rank))
    dist.all_reduce(u)
    c.equal(u, torch.full((N,), float(size * (size - 1) // 2)), "all_reduce after the ranks freed differently")


def too_big(c):
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    c.raises(lambda: backend.allocate_tensor(1 << 62, dtype=torch.float64, device=torch.device("cpu")),
             "4611686018427387904 elements of 8 bytes", "allocate_tensor of 2^62 float64 elements")
    c.raises(lambda: backend.allocate_tensor(-1, dtype=torch.float32, device=torch.device("cpu")),
             "-1 elements", "allocate_tensor of -1 elements")


def fsdp2(c):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (size,))
    model = test_fsdp.make_model()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    for module in model.modules():  # each module's own parameters: set on each
        if hasattr(module, "set_allocate_memory_from_process_group_for_comm"):
            module.set_allocate_memory_from_process_group_for_comm(True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in test_fsdp.batches(size):
        mine = slice(rank * test_fsdp.BATCH, (rank + 1) * test_fsdp.BATCH)
        opt.zero_grad()
        nn.functional.mse_loss(model(x[mine]), y[mine]).backward()
        opt.step()
    trained = [p.full_tensor().detach() for p in model.parameters()]
    for k, (got, want) in enumerate(zip(trained, test_fsdp.reference(size))):
        err = (got - want).abs().max().item()
        c.check(err <= 1e-9, f"parameter {k}: {err:.3g} from the single-process reference")


c.run(direct)
c.run(too_big)
c.run(fsdp2)
gc.collect()  # FSDP2's modules hold their buffers in reference cycles
pgstrategy_torch.dump_trace()
dist.barrier()
mine = json.load(open(glob.glob(os.path.join(folder, f"pgstrategy-*-rank{rank}.json"))[0]))
entries = [e for s in mine["strategies"] for e in s["entries"] if e.get("status") == "PG_OK"]
shared = {(e["op"], e["shared"]) for e in entries if "shared" in e}
c.check(("allreduce", "send,recv") in shared, f"the all_reduce read in place: {sorted(shared)}")
c.check(any(op == "reduce_scatter" and "send" in how for op, how in shared),
        f"FSDP2's reduce-scatter read its input in place: {sorted(shared)}")
c.check(any(op == "allgather" and "recv" in how for op, how in shared),
        f"FSDP2's all-gather in the group's memory: {sorted(shared)}")
sys.exit(c.finish())
