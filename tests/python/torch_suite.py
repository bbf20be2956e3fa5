"""PyTorch's own distributed test suite on the "pgstrategy" backend.

torch ships the suite it runs for its built-in backends
(``torch.testing._internal.distributed.distributed_test``, class
``DistributedTest._DistTestBase``); an out-of-tree backend runs it by naming
itself among the backends with plugin, DDP and subgroup support before the
suite is imported. Every test starts ``WORLD_SIZE`` processes, forked from
this one, that meet through a FileStore; the backend brings MPI up through
it (no MPI launcher). Tests gated to named built-in backends, or needing
GPUs, skip by torch's own rules.

    python tests/python/torch_suite.py [unittest arguments, e.g. -k all_reduce]

Environment: WORLD_SIZE (default 2), PGS_BACKEND (what runs underneath,
default the device default, mpi), PGS_SUITE_LIST: a file of test names to run
(one a line, ``#`` comments; torch_suite_cpu.txt lists those that apply on
CPU), PGS_SUITE_MATCH: of those, the ones whose name contains it,
PGS_SUITE_SKIP: ``;``-separated test names this run leaves out (the
differences docs/pytorch.md lists), PGS_SUITE_START=spawn: each test's
processes spawned fresh, as torch's own CI starts them (seven to thirteen times
as long).
"""

import os
import sys
import tempfile
import unittest

os.environ["BACKEND"] = "pgstrategy"
# torch's CI mode (on when CI is set, as CI services do) writes XML reports
# through a package torch does not install and reads PyTorch's own lists of
# disabled tests: this runner is not PyTorch's CI.
os.environ.pop("CI", None)
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="pgstrategy-suite-"))

import torch.multiprocessing  # noqa: E402
import pgstrategy_torch  # noqa: E402,F401  (registers "pgstrategy")
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

for feature in ("plugin", "ddp", "subgroup"):
    DistTestCases.backend_feature[feature].add("pgstrategy")

from torch.testing._internal.common_utils import run_tests  # noqa: E402
from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402

# Forked, a test's processes have torch imported already; spawned, each
# imports it again.
START = os.environ.get("PGS_SUITE_START", "fork")
if START not in ("fork", "spawn"):
    sys.exit(f"torch_suite.py: PGS_SUITE_START={START!r}: expected fork (the default) or spawn")
FORK = START == "fork"


class TestPgstrategyBackend(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if FORK:
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()


for name in filter(None, os.environ.get("PGS_SUITE_SKIP", "").split(";")):
    skip = unittest.skip("a difference from torch's own backends that docs/pytorch.md lists")
    setattr(TestPgstrategyBackend, name, skip(getattr(TestPgstrategyBackend, name)))

if os.environ.get("PGS_SUITE_LIST"):
    with open(os.environ["PGS_SUITE_LIST"], encoding="utf-8") as listed:
        names = [line.strip() for line in listed if line.strip() and not line.startswith("#")]
    match = os.environ.get("PGS_SUITE_MATCH", "")
    sys.argv += [f"TestPgstrategyBackend.{name}" for name in names if match in name]

if __name__ == "__main__":
    sys.exit(run_tests())
