"""Lightning under mpiexec: Trainer(strategy=DDPStrategy(process_group_backend=
"pgstrategy")) ("object") or Trainer(strategy="ddp_pgstrategy") ("name")
trains a tiny LightningModule on 2 CPU processes; the process group's backend
is pgstrategy and the weights match on every rank (checked over mpi4py, apart
from the group under test); every rank exits 0, also at interpreter exit."""

import sys

import pgs_test
import torch
import torch.distributed as dist

try:
    import lightning.pytorch as L
    from lightning.pytorch.strategies import DDPStrategy
    from mpi4py import MPI
except ImportError as error:  # Lightning's MPI environment needs mpi4py
    print(f"SKIP: Lightning or mpi4py cannot be imported: {error}", flush=True)
    sys.exit(pgs_test.SKIP)

import pgstrategy_torch  # noqa: E402  (after Lightning: registers "ddp_pgstrategy")


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(8, 2)

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    mode = sys.argv[1]
    strategy = {"object": lambda: DDPStrategy(process_group_backend="pgstrategy"), "name": lambda: "ddp_pgstrategy"}[mode]()
    data = torch.utils.data.TensorDataset(torch.randn(64, 8, generator=torch.Generator().manual_seed(1)),
                                          torch.randn(64, 2, generator=torch.Generator().manual_seed(2)))
    model = Tiny()
    trainer = L.Trainer(accelerator="cpu", devices=MPI.COMM_WORLD.Get_size(), strategy=strategy, max_steps=3,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=8))

    failures = []
    if dist.get_backend() != "pgstrategy":
        failures.append(f"the process group's backend is {dist.get_backend()!r}")
    if "backend 'mpi'" not in pgstrategy_torch.describe():
        failures.append(f"the group runs {pgstrategy_torch.describe()}")
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    everyone = MPI.COMM_WORLD.allgather(weights.tolist())
    if any(w != everyone[0] for w in everyone):
        failures.append(f"weights differ between ranks: {everyone}")
    if weights.tolist() == torch.cat([p.detach().flatten() for p in Tiny().parameters()]).tolist():
        failures.append("the weights did not change")
    for failure in failures:
        print(f"[rank {MPI.COMM_WORLD.Get_rank()}] FAIL ({mode}): {failure}", flush=True)
    bad = MPI.COMM_WORLD.allreduce(len(failures))
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(f"test_lightning ({mode}): {'OK' if bad == 0 else f'{bad} failure(s)'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
