"""How MPI comes up under the torch backend (docs/launch.md).

Under ``mpiexec``/``srun`` MPI joins the launcher's job, as always. Without an
MPI launcher (torchrun, Lightning's own launcher, Kubernetes-style
``RANK``/``WORLD_SIZE`` copies) the first group's creator brings MPI up
through the library's bootstrap, meeting at the Store torch hands it: rank 0
opens the library's rendezvous and puts its address and a fresh secret in the
Store; every rank reads them and joins (``pg_bootstrap_listen``,
``pg_bootstrap_join``).

A process that multiprocessing forked (``torch.multiprocessing`` with
``start_method="fork"``, Lightning's ``ddp_fork`` and ``ddp_notebook``) ends in
``os._exit``, past the exit handlers where the library finalizes the MPI it
brought up; without them a peer still running would see the rank die and end
the job. After bringing MPI up there, this registers the end (shutdown, then
``MPI_Finalize``) with multiprocessing, which runs it as the process ends.

Lightning initializes MPI early when mpi4py is installed: its
``MPIEnvironment.detect()`` calls ``COMM_WORLD.Get_size()`` while the Trainer
is built, which makes every process a 1-process MPI job before any backend
exists. Without an MPI launcher there is no MPI job for it to find, so once
this package is imported ``detect()`` answers ``False`` there without touching
MPI (the same answer, without the side effect).
"""

import importlib.abc
import multiprocessing
import multiprocessing.util
import secrets
import sys

from torch.distributed import DistBackendError

from . import _C

# The Store key rank 0 publishes "host:port secret" under (torch prefixes it per group).
STORE_KEY = "pgstrategy/bootstrap"

_LIGHTNING_MPI = ("lightning.fabric.plugins.environments.mpi", "lightning_fabric.plugins.environments.mpi")


def _singleton_message(rank, size):
    cause = "the application initialized MPI first"
    if "mpi4py.MPI" in sys.modules:
        cause = (
            "mpi4py initialized it: Lightning's MPIEnvironment does so while the Trainer is built when mpi4py is "
            "installed, and so does 'from mpi4py import MPI'"
        )
    return (
        f"pgstrategy: MPI was initialized as a 1-process job before the 'pgstrategy' backend could bring this "
        f"job's {size} processes into one MPI world (this is torch's rank {rank}); {cause}. Fix: 'import "
        f"pgstrategy_torch' at the top of the script, before the Trainer is built or mpi4py.MPI is imported "
        f"(or start the job with mpiexec) -- docs/launch.md"
    )


def bring_up(store, rank, size, world_size=None):
    """Brings MPI up for torch's job of ``size`` processes when no MPI launcher did (collective).

    ``world_size``: the size of torch's default group when this group is a subgroup of
    it (the default group is another backend): MPI must then be up already, since the
    ranks outside the subgroup take no part in making it.
    """
    initialized, world, finalized = _C.mpi_world()
    if finalized:
        raise DistBackendError("pgstrategy: MPI has been finalized; no process group can be made any more")
    if initialized:
        if world == 1 and size > 1:
            raise DistBackendError(_singleton_message(rank, size))
        return
    if _C.mpi_launcher():
        return
    if world_size is not None and world_size != size:
        raise DistBackendError(
            f"pgstrategy: this 'pgstrategy' group of {size} ranks is the first of torch's {world_size}-rank job, "
            f"and no MPI launcher started the job: MPI must come up over every rank, but the ranks outside this "
            f"group take no part in making it. Make the default group 'pgstrategy' (init_process_group(backend="
            f"'pgstrategy') or 'cpu:pgstrategy,cuda:nccl'), start the job with mpiexec or srun, or initialize MPI "
            f"on every rank (mpi4py) before new_group -- docs/launch.md"
        )
    if size == 1:
        return
    try:
        if rank == 0:
            secret = secrets.token_hex(32)
            address = _C.bootstrap_listen(size, secret)
            store.set(STORE_KEY, f"{address} {secret}")
        else:
            address, secret = store.get(STORE_KEY).decode().split(" ")
        _C.bootstrap_join(rank, size, address, secret)
    except RuntimeError as error:
        raise DistBackendError(str(error)) from None
    if multiprocessing.parent_process() is not None and _start_method() != "spawn":
        multiprocessing.util.Finalize(None, _C.finish_forked, exitpriority=0)


def _start_method():
    """How multiprocessing started this process: "fork", "forkserver", "spawn", or
    None for its default context (fork or forkserver on Linux)."""
    return getattr(multiprocessing.current_process(), "_start_method", None)


def _quiet_detect(module):
    cls = getattr(module, "MPIEnvironment", None)
    if cls is None or getattr(cls.detect, "_pgstrategy", False):
        return
    original = cls.detect

    def detect():
        if not _C.mpi_launcher():
            return False  # no MPI launcher: no MPI job to find, and MPI stays uninitialized
        return original()

    detect._pgstrategy = True
    detect.__doc__ = original.__doc__
    cls.detect = staticmethod(detect)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Applies _quiet_detect to Lightning's MPI environment module when it is imported."""

    def find_spec(self, name, path, target=None):
        if name not in _LIGHTNING_MPI:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _quiet_detect(module)

        loader.exec_module = exec_module
        return spec


def quiet_lightning_mpi_detection():
    """Without an MPI launcher, keeps Lightning's MPIEnvironment.detect() from initializing MPI."""
    if _C.mpi_launcher():
        return
    for name in _LIGHTNING_MPI:
        if name in sys.modules:
            _quiet_detect(sys.modules[name])
    if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
