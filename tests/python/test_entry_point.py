"""The pip-installed package, found by torch through its entry point:
init_process_group("pgstrategy") with no import of pgstrategy_torch before
it, then an allreduce checked against its exact value."""

import os
import sys

import pgs_test
import torch
import torch.distributed as dist

# torch's rendezvous from the launcher's variables (Hydra's, Open MPI's).
for ours, theirs in (("RANK", ("PMI_RANK", "OMPI_COMM_WORLD_RANK")),
                     ("WORLD_SIZE", ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"))):
    if ours not in os.environ:
        os.environ[ours] = next(os.environ[v] for v in theirs if v in os.environ)
c = pgs_test.Checks("test_entry_point")
c.check("pgstrategy_torch" not in sys.modules, "the package was imported before init_process_group")
dist.init_process_group("pgstrategy")
package = sys.modules.get("pgstrategy_torch")
site = os.environ["PYTHONPATH"].split(":")[0]
c.check(package is not None and package.__file__.startswith(site),
        f"the entry point loaded {package and package.__file__}, expected the package installed in {site}")
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.arange(5, dtype=torch.float64) + rank
dist.all_reduce(t)
c.equal(t, torch.arange(5, dtype=torch.float64) * size + sum(range(size)), "all_reduce")
sys.exit(c.finish())
