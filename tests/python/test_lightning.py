"""Lightning under mpiexec: Trainer(strategy=DDPStrategy(process_group_backend=
"pgstrategy")) ("object"), Trainer(strategy="ddp_pgstrategy") ("name"),
FSDPStrategy(process_group_backend="pgstrategy") ("fsdp": Lightning runs it on
CUDA only; skipped without a GPU) or ModelParallelStrategy(process_group_backend=
"pgstrategy") with FSDP2's fully_shard in configure_model ("fsdp2", on CPU)
trains a tiny LightningModule on 2 processes; the process group's backend
is pgstrategy and the weights match on every rank (checked over mpi4py, apart
from the group under test); every rank exits 0, also at interpreter exit."""

import sys

import pgs_test
import torch
import torch.distributed as dist

try:
    import lightning.pytorch as L
    from lightning.pytorch.strategies import DDPStrategy, FSDPStrategy, ModelParallelStrategy
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


class Sharded(Tiny):
    """FSDP2 over the data-parallel dimension of ModelParallelStrategy's mesh."""

    def configure_model(self):
        from torch.distributed.fsdp import fully_shard

        fully_shard(self.layer, mesh=self.device_mesh["data_parallel"])


def full_weights(model):
    """The weights, gathered from FSDP2's shards where they are sharded."""
    return torch.cat([(p.full_tensor() if hasattr(p, "full_tensor") else p).detach().flatten()
                      for p in model.parameters()])


def main():
    mode = sys.argv[1]
    size = MPI.COMM_WORLD.Get_size()
    if mode == "fsdp" and not torch.cuda.is_available():
        if MPI.COMM_WORLD.Get_rank() == 0:
            print("SKIP: Lightning's FSDPStrategy runs on CUDA only, and there is no GPU here", flush=True)
        return pgs_test.SKIP
    strategy = {"object": lambda: DDPStrategy(process_group_backend="pgstrategy"), "name": lambda: "ddp_pgstrategy",
                "fsdp": lambda: FSDPStrategy(process_group_backend="pgstrategy"),
                "fsdp2": lambda: ModelParallelStrategy(data_parallel_size=size, tensor_parallel_size=1,
                                                       process_group_backend="pgstrategy")}[mode]()
    data = torch.utils.data.TensorDataset(torch.randn(64, 8, generator=torch.Generator().manual_seed(1)),
                                          torch.randn(64, 2, generator=torch.Generator().manual_seed(2)))
    model = Sharded() if mode == "fsdp2" else Tiny()
    accelerator = "cuda" if mode == "fsdp" else "cpu"
    trainer = L.Trainer(accelerator=accelerator, devices=size, strategy=strategy, max_steps=3,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=8))

    failures = []
    if dist.get_backend() != "pgstrategy":
        failures.append(f"the process group's backend is {dist.get_backend()!r}")
    if mode != "fsdp" and "backend 'mpi'" not in pgstrategy_torch.describe():
        failures.append(f"the group runs {pgstrategy_torch.describe()}")
    if mode == "fsdp":  # FSDP1: the full weights, gathered from the shards
        from torch.distributed.fsdp import FullyShardedDataParallel

        with FullyShardedDataParallel.summon_full_params(trainer.strategy.model):
            weights = torch.cat([p.detach().flatten().cpu() for p in model.parameters()])
    else:
        weights = full_weights(model)
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
