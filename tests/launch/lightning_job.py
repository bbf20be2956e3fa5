"""Lightning's own launcher (label launch): `python lightning_job.py` with
Trainer(accelerator="cpu", devices=2, strategy=DDPStrategy(process_group_backend="pgstrategy")),
run as a user runs it: Lightning starts the second process itself, and the
backend brings MPI up through the library's bootstrap. After fit, every rank
checks torch's rank and size and an allreduce, and prints
"lightning_job: rank R of N: OK".

    python lightning_job.py                   # pgstrategy_torch imported first (mpi4py installed or not)
    python lightning_job.py --no-mpi4py       # as if mpi4py were not installed
    python lightning_job.py --no-import       # the backend found through its entry point only
    python lightning_job.py --die 1           # rank 1 SIGKILLs itself during training

--no-mpi4py makes `import mpi4py` fail in every process (Lightning's
MPIEnvironment.detect() then answers False without initializing MPI, as when
mpi4py is absent). Exits 77 (skipped) when torch or Lightning is missing.
"""

import os
import signal
import sys

if "--no-mpi4py" in sys.argv:
    sys.modules["mpi4py"] = None  # every import of mpi4py fails, in this process and in the ones Lightning starts
if "--no-import" not in sys.argv:
    try:
        import pgstrategy_torch  # noqa: F401  (before the Trainer: Lightning's MPI detection stays quiet)
    except ImportError as error:
        print(f"SKIP: pgstrategy_torch cannot be imported: {error}", flush=True)
        sys.exit(77)

try:
    import lightning.pytorch as L
    import torch
    import torch.distributed as dist
    from lightning.pytorch.strategies import DDPStrategy
except ImportError as error:
    print(f"SKIP: torch or Lightning cannot be imported: {error}", flush=True)
    sys.exit(77)

DIE = int(sys.argv[sys.argv.index("--die") + 1]) if "--die" in sys.argv else -1


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)

    def training_step(self, batch, index):
        if index == 3 and self.global_rank == DIE:
            print(f"lightning_job: rank {self.global_rank} kills itself", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main():
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy=DDPStrategy(process_group_backend="pgstrategy"),
                        max_epochs=1, logger=False, enable_checkpointing=False, enable_model_summary=False,
                        enable_progress_bar=False)
    trainer.fit(Model(), loader)
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    ok = size == 2 and rank == trainer.global_rank and t.item() == 3.0
    print(f"lightning_job: rank {rank} of {size}: {'OK' if ok else 'FAILED'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
