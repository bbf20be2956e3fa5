"""The torch backend "pgstrategy" against torch's own gloo, in one run.

    mpiexec -n 2 python tools/pg-bench/compare/torch_backend.py busbw [--min 1M] [--max 256M] [--reps 5] [--group-memory]
    mpiexec -n 2 python tools/pg-bench/compare/torch_backend.py latency [--calls 2000] [--reps 9] [--python-backend]
    mpiexec -n 2 python tools/pg-bench/compare/torch_backend.py ddp [--steps 5] [--reps 3] [--python-backend]
    mpiexec -n 2 python tools/pg-bench/compare/torch_backend.py fsdp [--steps 5] [--reps 3] [--batch 8] [--group-memory]

(PYTHONPATH: the package, built in <build>/python or pip-installed.) Each
subcommand makes groups on "pgstrategy" with mpi and with fairring
underneath and a group on torch's gloo, and runs them interleaved: per size
and repetition each group in turn, so a noisy phase of the machine hits all
alike. As in pg-bench, every timed call starts after the group's own barrier,
its time is the slowest rank's, and a row is the median.

busbw: all_reduce of float32 (sum), busbw = size / time * 2(n-1)/n, the result
checked against its exact value once per size. latency: 8-byte all_reduce per
call. ddp: the time of one DistributedDataParallel training step of a 25 M
parameter MLP (forward, backward with the gradient allreduces, SGD step).
fsdp: the same model sharded with FSDP2 (fully_shard of each layer and of the
model, on a DeviceMesh of the group): a step all-gathers every layer's
parameters in the forward and again in the backward, and reduce-scatters the
gradients; printed with the step without communication, and the share of the
gloo step that is communication. --group-memory adds fairring on tensors
from the group's memory (allocateTensor; in fsdp, FSDP2's staging buffers
through set_allocate_memory_from_process_group_for_comm). --python-backend adds the library as a
backend written in Python over its C API (torch_python_backend.py): what a
binding that links nothing of torch's C++ ABI would cost.
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import pgstrategy_torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tools/pg-bench
from pg_bench_sizes import human_bytes, size_arg  # noqa: E402  (sizes as pg-bench reads and prints them)


def mlp():
    """The DDP step's model: 25.2 M float32 parameters."""
    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1024))


def slowest(seconds):
    """Each call's time on the slowest rank."""
    t = torch.tensor(seconds, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # over the default group
    return t.tolist()


def timed(group, calls, call):
    times = []
    for _ in range(calls):
        dist.barrier(group=group)
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return slowest(times)


def groups(python_backend=False):
    made = {name: dist.new_group(backend="pgstrategy", pg_options=pgstrategy_torch.Options(backend=name))
            for name in ("mpi", "fairring")}
    if python_backend:  # the same mpi underneath, through a backend written in Python
        import torch_python_backend  # noqa: F401  (registers "pgstrategy_py")

        made["python mpi"] = dist.new_group(backend="pgstrategy_py")
    made["gloo"] = dist.new_group(backend="gloo")
    return made


def label(name):
    return {"gloo": "torch gloo", "python mpi": "Python backend/mpi"}.get(name, "pgstrategy/" + name)


def group_memory(model):
    """FSDP2's staging buffers from the group (allocateTensor), on every sharded module."""
    for module in model.modules():
        if hasattr(module, "set_allocate_memory_from_process_group_for_comm"):
            module.set_allocate_memory_from_process_group_for_comm(True)
    return model


def busbw(args, rank, size):
    made = groups()
    if args.group_memory:  # fairring again, on tensors from the group's memory (allocateTensor)
        made["fairring, group memory"] = made["fairring"]
    fairring = made["fairring"]._get_backend(torch.device("cpu"))
    rows = {}
    n = args.min
    while n <= args.max:
        count = n // 4
        plain = torch.empty(count)
        bufs = {name: plain for name in made}
        if args.group_memory:
            bufs["fairring, group memory"] = fairring.allocate_tensor(count, dtype=torch.float32,
                                                                      device=torch.device("cpu"))
        calls = max(10, min(50, (256 << 20) // n))
        for name, group in made.items():  # checked once (sum of rank + 1), then warmed up as pg-bench does
            bufs[name].fill_(rank + 1)
            dist.all_reduce(bufs[name], group=group)
            if not torch.all(bufs[name] == size * (size + 1) / 2):
                sys.exit(f"{name}: wrong allreduce result at {human_bytes(n)}")
            for _ in range(4):
                dist.all_reduce(bufs[name], group=group)
        for _ in range(args.reps):
            for name, group in made.items():
                t = statistics.median(timed(group, calls, lambda g=group, b=bufs[name]: dist.all_reduce(b, group=g)))
                rows.setdefault((n, name), []).append(t)
        del bufs
        n *= 4
    if rank == 0:
        factor = 2 * (size - 1) / size
        print(f"all_reduce float32 sum, {size} ranks, busbw GB/s (median over {args.reps} repetitions)")
        names = [name for name in made if name != "gloo"]
        print(f"{'size':>9}" + "".join(f"  {label(name):>{max(len(label(name)), 8)}}" for name in made) +
              "".join(f"  {label(name) + ' / gloo':>{len(label(name)) + 7}}" for name in names))
        for n in sorted({n for n, _ in rows}):
            bw = {name: n / statistics.median(rows[(n, name)]) * factor / 1e9 for name in made}
            print(f"{human_bytes(n):>9}" + "".join(f"  {bw[name]:>{max(len(label(name)), 8)}.2f}" for name in made) +
                  "".join(f"  {bw[name] / bw['gloo']:>{len(label(name)) + 7}.2f}" for name in names))


def latency(args, rank, size):
    made = groups(args.python_backend)
    buf = torch.ones(2)
    times = {name: [] for name in made}
    for _ in range(args.reps):
        for name, group in made.items():
            times[name] += timed(group, args.calls, lambda g=group: dist.all_reduce(buf, group=g))
    if rank == 0:
        print(f"8-byte all_reduce through torch.distributed, {size} ranks, us per call "
              f"(median of {args.reps} x {args.calls})")
        for name in made:
            print(f"  {label(name):22} {statistics.median(times[name]) * 1e6:8.2f}")


def training_steps(args, rank, size, title, wrap, group_memory_too=False):
    """ms per training step of mlp() wrapped by wrap(model, group) on every
    group, interleaved, beside the same step without communication; with
    group_memory_too, also fairring's with FSDP2's buffers from the group."""
    torch.set_num_threads(1)  # one core per rank
    made = groups(getattr(args, "python_backend", False))
    if group_memory_too:
        made["fairring, group memory"] = made["fairring"]
    batch = torch.randn(args.batch, 1024), torch.randn(args.batch, 1024)
    models = {}
    for name, group in made.items():
        torch.manual_seed(0)
        model = wrap(mlp(), group)
        if name == "fairring, group memory":
            group_memory(model)
        models[name] = (model, torch.optim.SGD(model.parameters(), lr=1e-4))
    # the same step without communication: what the collectives add
    alone = mlp()
    models["alone"] = (alone, torch.optim.SGD(alone.parameters(), lr=1e-4))

    def step(name):
        model, optimizer = models[name]
        optimizer.zero_grad()
        nn.functional.mse_loss(model(batch[0]), batch[1]).backward()
        optimizer.step()

    for name in models:  # warm-up
        step(name)
    times = {name: [] for name in made}
    for _ in range(args.reps):
        for name, group in made.items():
            times[name] += timed(group, args.steps, lambda n=name: step(n))
    compute = timed(made["gloo"], args.steps * args.reps, lambda: step("alone"))
    if rank == 0:
        params = sum(p.numel() for p in alone.parameters())
        ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        bare = statistics.median(compute) * 1e3
        print(f"{title} step, {params / 1e6:.1f} M parameters (float32), batch {args.batch}, {size} ranks, "
              f"one thread each; ms per step (median of {args.reps} x {args.steps})")
        width = max(len(label(name)) for name in made)
        print(f"  {'no communication':{width}} {bare:8.1f}")
        for name in made:
            print(f"  {label(name):{width}} {ms[name]:8.1f}   "
                  f"gloo / this: {ms['gloo'] / ms[name]:.2f}")
        print(f"  communication's share of the gloo step: {(ms['gloo'] - bare) / ms['gloo']:.0%}")


def ddp(args, rank, size):
    training_steps(args, rank, size, "DDP", lambda model, group: DistributedDataParallel(model, process_group=group))


def fsdp(args, rank, size):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    def shard(model, group):
        mesh = DeviceMesh.from_group(group, "cpu")
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        return fully_shard(model, mesh=mesh)

    training_steps(args, rank, size, "FSDP2", shard, args.group_memory)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("busbw")
    b.add_argument("--min", type=size_arg, default="1M")
    b.add_argument("--max", type=size_arg, default="256M")
    b.add_argument("--reps", type=int, default=5)
    b.add_argument("--group-memory", action="store_true",
                   help="also fairring on tensors from the group's memory (allocateTensor)")
    lat = sub.add_parser("latency")
    lat.add_argument("--calls", type=int, default=2000)
    lat.add_argument("--reps", type=int, default=9)

    def training_parser(name, batch):
        t = sub.add_parser(name)
        t.add_argument("--steps", type=int, default=5)
        t.add_argument("--reps", type=int, default=3)
        t.add_argument("--batch", type=int, default=batch)
        return t

    d = training_parser("ddp", batch=32)
    for sub_parser in (lat, d):
        sub_parser.add_argument("--python-backend", action="store_true",
                                help="also the library as a backend written in Python (torch_python_backend.py)")
    f = training_parser("fsdp", batch=8)
    f.add_argument("--group-memory", action="store_true",
                   help="also fairring with FSDP2's staging buffers from the group (allocateTensor)")
    args = parser.parse_args()
    pgstrategy_torch.mpi_env()
    dist.init_process_group("pgstrategy")
    {"busbw": busbw, "latency": latency, "ddp": ddp, "fsdp": fsdp}[args.what](args, dist.get_rank(),
                                                                             dist.get_world_size())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
