"""The torch backend started without an MPI launcher (label launch): under
torchrun, init_process_group("pgstrategy") brings MPI up through the
library's bootstrap, meeting at torch's Store. Checks that torch's ranks are
MPI's, collectives against exact values, and DDP (the averaged gradient of a
linear model is known exactly); prints "torch_job: rank R of N ...: OK".

    torchrun --nproc-per-node 3 torch_job.py
    torchrun --nproc-per-node 3 torch_job.py --die 1    # rank 1 SIGKILLs itself in a loop of allreduces

Exits 77 (skipped) when torch or pgstrategy_torch cannot be imported.
"""

import argparse
import os
import signal
import sys
import time

try:
    import torch
    import torch.distributed as dist
    import pgstrategy_torch
except ImportError as error:
    print(f"SKIP: torch or pgstrategy_torch cannot be imported: {error}", flush=True)
    sys.exit(77)


def since_start():
    """Seconds since this process started, from the kernel (field 22 of /proc/self/stat)."""
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/self/stat") as f:
        started = int(f.read().rsplit(")", 1)[1].split()[19]) / ticks
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) - started


IMPORTED = since_start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--die", type=int, default=-1, help="this rank kills itself among allreduces")
    parser.add_argument("--time", action="store_true", help="print the seconds from process start to the first allreduce")
    parser.add_argument("--big", action="store_true", help="also a 16 MiB allreduce, and the full description")
    args = parser.parse_args()
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
            print(f"torch_job: FAIL: {what}", flush=True)

    pgstrategy_torch.mpi_env()  # under mpiexec (the benchmark's baseline): torch's ranks from MPI; else nothing
    dist.init_process_group("pgstrategy")
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    if args.time:
        done = since_start()
        print(f"torch_job: rank {rank}: first allreduce done {done:.2f} s after the process started "
              f"({done - IMPORTED:.2f} s after torch was imported)", flush=True)
    check(torch.equal(t, torch.full((1000,), size * (size + 1) / 2)), f"allreduce gave {t[:4].tolist()}")
    check(str(rank) == os.environ.get("RANK", str(rank)), f"torch's rank {rank}, RANK={os.environ.get('RANK')}")
    if not pgstrategy_torch.mpi_launcher():
        check("PMI_FD" not in os.environ, "PMI_FD is still set after the bootstrap brought MPI up")
    described = pgstrategy_torch.describe()
    check(f"rank {rank} of {size}" in described, f"describe() says {described!r}")

    if args.big:
        big = torch.arange(4 << 20, dtype=torch.int32) % 1000 + rank
        dist.all_reduce(big)
        want = (torch.arange(4 << 20, dtype=torch.int32) % 1000) * size + size * (size - 1) // 2
        check(torch.equal(big, want), "the 16 MiB allreduce")
        print(f"torch_job: rank {rank}: {described}", flush=True)

    token = torch.tensor([rank * 10 + 7 if rank == size - 1 else -1])
    dist.broadcast(token, size - 1)
    check(token.item() == (size - 1) * 10 + 7, f"broadcast gave {token.item()}")
    gathered = [torch.zeros(2, dtype=torch.int64) for _ in range(size)]
    dist.all_gather(gathered, torch.tensor([rank, rank * rank]))
    check(all(g.tolist() == [r, r * r] for r, g in enumerate(gathered)), f"all_gather gave {gathered}")

    # DDP: rank r's batch is all r + 1, so its gradient of sum(w . x) is 4 (r + 1) per weight; DDP averages.
    model = torch.nn.Linear(8, 1, bias=False)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp(torch.full((4, 8), float(rank + 1))).sum().backward()
    expected = torch.full((1, 8), 2.0 * (size + 1))
    check(torch.allclose(model.weight.grad, expected), f"DDP gradient {model.weight.grad[0, :3].tolist()}")

    if args.die >= 0:
        one = torch.ones(1)
        for i in range(10**9):
            if i == 20 and rank == args.die:
                print(f"torch_job: rank {rank} kills itself", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            dist.all_reduce(one)
            time.sleep(0.001)

    total = torch.tensor([len(failures)])
    dist.all_reduce(total)
    print(f"torch_job: rank {rank} of {size}, {described.split(',')[0]}: {'OK' if total.item() == 0 else 'FAILED'}",
          flush=True)
    dist.destroy_process_group()
    return 0 if total.item() == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
