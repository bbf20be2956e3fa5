"""A Lightning model trained over the torch.distributed backend "pgstrategy".

    python lightning_train.py --devices 2                         # Lightning starts the second process itself
    torchrun --nproc-per-node 2 lightning_train.py
    mpiexec -n 2 python lightning_train.py                       # DDPStrategy(process_group_backend="pgstrategy")
    mpiexec -n 2 python lightning_train.py --strategy ddp_pgstrategy   # the registered strategy name
    PGS_BACKEND=cpu:fairring mpiexec -n 2 python lightning_train.py
    srun -N 1 --ntasks-per-node=2 --mpi=pmi2 python lightning_train.py --devices 2
    PGS_TRACE=/tmp/trace mpiexec -n 2 python lightning_train.py     # flight recorder: then pg-trace /tmp/trace

Lightning finds the ranks through mpi4py under mpiexec (MPIEnvironment) and
through Slurm's variables under srun (which wants --ntasks-per-node);
`devices` must be the ranks per node. Without an MPI launcher the backend
brings MPI up itself (docs/launch.md); importing pgstrategy_torch before the
Trainer is built keeps Lightning's MPI detection from initializing MPI first.
"""

import argparse
import os

import lightning.pytorch as L
import torch
from lightning.pytorch.strategies import DDPStrategy

import pgstrategy_torch  # after Lightning: registers the strategy name "ddp_pgstrategy"


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss, sync_dist=True, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default=None, help="a strategy name, e.g. ddp_pgstrategy")
    parser.add_argument("--devices", type=int, default=None, help="ranks per node (default: all on one node)")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    strategy = args.strategy or DDPStrategy(process_group_backend="pgstrategy")

    torch.manual_seed(0)
    x = torch.randn(512, 16)
    y = x.sum(dim=1, keepdim=True)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32)

    devices = args.devices
    if devices is None and pgstrategy_torch.mpi_launcher():
        from mpi4py import MPI  # noqa: PLC0415 - only under mpiexec

        devices = MPI.COMM_WORLD.Get_size()
    elif devices is None:
        devices = int(os.environ.get("LOCAL_WORLD_SIZE", 2))  # torchrun's, else 2 processes
    trainer = L.Trainer(accelerator="cpu", devices=devices, strategy=strategy, max_epochs=args.epochs,
                        logger=False, enable_checkpointing=False, enable_model_summary=False)
    trainer.fit(Regression(), loader)
    if trainer.global_rank == 0:
        print(f"trained on {trainer.world_size} ranks; loss {trainer.callback_metrics['loss'].item():.4f}")
        print(f"underneath: {pgstrategy_torch.describe()}")
        # PGS_TRACE=DIR: every rank's last operations go to DIR/pgstrategy-<job>-rank<R>.json.
        if os.environ.get("PGS_TRACE"):
            print(f"flight recorder: dumps in {os.environ['PGS_TRACE']}; read them with: pg-trace {os.environ['PGS_TRACE']}")


if __name__ == "__main__":
    main()
