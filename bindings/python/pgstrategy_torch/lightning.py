"""Lightning's strategy name ``"ddp_pgstrategy"``: DDP over the ``"pgstrategy"`` backend.

``Trainer(strategy="ddp_pgstrategy")`` is ``Trainer(strategy=DDPStrategy(process_group_backend="pgstrategy"))``.
Importing this module registers the name with ``lightning.pytorch`` and
``pytorch_lightning``, whichever are installed; importing ``pgstrategy_torch``
after Lightning does it too.
"""

import importlib

NAME = "ddp_pgstrategy"


def register():
    """Register ``"ddp_pgstrategy"`` in the strategy registry of each installed Lightning."""
    for package in ("lightning.pytorch", "pytorch_lightning"):
        try:
            strategies = importlib.import_module(package + ".strategies")
        except ImportError:
            continue
        if NAME not in strategies.StrategyRegistry:
            strategies.StrategyRegistry.register(
                NAME,
                strategies.DDPStrategy,
                description="DDP over pgstrategy (the torch.distributed backend 'pgstrategy')",
                process_group_backend="pgstrategy",
            )


register()
