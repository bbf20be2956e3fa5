"""Every pgstrategy backend as one torch.distributed backend, ``"pgstrategy"``.

Importing this package (or calling ``init_process_group("pgstrategy")``, which
finds it through the ``torch.distributed.backends`` entry point) registers the
backend for ``cpu`` and ``cuda``::

    import torch.distributed as dist
    dist.init_process_group("pgstrategy")                      # under mpiexec or srun
    dist.init_process_group("pgstrategy", pg_options=pgstrategy_torch.Options(backend="fairring"))

Which pgstrategy backend runs underneath: ``Options.backend``, else
``PGS_BACKEND`` (``cpu:fairring,cuda:nccl``), else the device default (``mpi``
on CPU, ``nccl`` on CUDA). With Lightning imported, importing this package also
registers the strategy name ``"ddp_pgstrategy"`` (see ``pgstrategy_torch.lightning``).
"""

import atexit
import dataclasses
import os
import socket
import sys

import torch
import torch.distributed as dist

from ._built_for import MPI_ABI as _MPI_ABI
from ._built_for import MPI_AT_RUNTIME as _MPI_AT_RUNTIME
from ._built_for import TORCH_VERSION as _BUILT_FOR


def _rebuild_hint(problem):
    return ImportError(
        f"pgstrategy_torch was built for torch {_BUILT_FOR}, and torch {torch.__version__} is installed"
        f"{problem}: its C++ extension works only with the torch it was built for. Rebuild it for this torch: "
        "pip install --force-reinstall --no-deps <pgstrategy checkout>/bindings/python"
    )


# Versions compared without the local label (+cpu, +cu132: the same C++ interface).
if torch.__version__.split("+")[0] != _BUILT_FOR.split("+")[0]:
    raise _rebuild_hint("")
# A build that leaves MPI to the run time loads its MPI library first (_mpi_library.py).
if _MPI_AT_RUNTIME:
    from . import _mpi_library

    _MPI_LOADED = _mpi_library.load(_MPI_ABI)
else:
    _MPI_LOADED = ""
try:
    from . import _C
except ImportError as error:
    if "undefined symbol" not in str(error):
        raise
    raise _rebuild_hint(f" ({error})") from None
from . import _launch  # noqa: E402

__all__ = ["Options", "register", "mpi_env", "mpi_launcher", "mpi_library", "describe", "backends", "version", "dump_trace"]

NAME = "pgstrategy"


@dataclasses.dataclass
class Options:
    """``pg_options`` of ``init_process_group`` and ``new_group`` for ``"pgstrategy"``.

    backend: the pgstrategy backend for every device of the group (``"mpi"``,
    ``"fairring"``, ``"nccl"``, the ``"gloo"`` plugin, any plugin or registered
    table); empty: ``PGS_BACKEND``, then the device default.
    """

    backend: str = ""


def _create(opts, options):
    if options is None:
        options = Options()
    if not isinstance(options, Options):
        raise TypeError(
            f"pg_options for the {NAME!r} backend must be pgstrategy_torch.Options; got {type(options).__name__}"
        )
    # Without an MPI launcher, the first group brings MPI up, meeting at torch's Store.
    _launch.bring_up(opts.store, opts.group_rank, opts.group_size, _default_group_size(opts))
    global _held_store
    _held_store = None  # torch's store (opts.store) holds mpi_env's server from now on
    return _C.ProcessGroup(
        opts.group_rank, opts.group_size, list(opts.global_ranks_in_group), options.backend, opts.timeout
    )


def _default_group_size(opts):
    """The size of torch's default group when this group is a subgroup of it, else None."""
    if not opts.global_ranks_in_group or not dist.is_initialized():
        return None
    return dist.get_world_size()


def _backend(group, device):
    """The pgstrategy backend of ``group`` on ``device`` (under TORCH_DISTRIBUTED_DEBUG=DETAIL
    torch wraps every backend in one that checks the collectives first)."""
    group = group if group is not None else dist.group.WORLD
    backend = group._get_backend(torch.device(device))
    return getattr(backend, "wrapped_pg", backend)


_registered = False


def register():
    """Register ``"pgstrategy"`` with torch.distributed (done on import; the entry point calls it)."""
    global _registered
    if not _registered:
        dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["cpu", "cuda"])
        _registered = True


_RENDEZVOUS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


# The TCP store mpi_env opened on rank 0, on a port the system chose: held until
# the backend's first group exists, whose store (made on rank 0 by torch with
# multi_tenant=True, at that port) then shares its server.
_held_store = None


def _rendezvous_of_rank0():
    """Rank 0's "host port" for mpi_env: MASTER_PORT when set, else a store of its own."""
    global _held_store
    port = os.environ.get("MASTER_PORT")
    if not port:
        # Port 0: the listener takes the port, so no process can take it between
        # a pick and torch's bind (EADDRINUSE under load).
        _held_store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, multi_tenant=True)
        port = _held_store.port
    return f"{socket.gethostname()} {port}"


def mpi_env():
    """Set torch's rendezvous variables from the MPI job, for a script started by mpiexec or srun.

    ``init_process_group`` meets its peers through a TCP store named by
    ``MASTER_ADDR``/``MASTER_PORT`` and needs ``RANK`` and ``WORLD_SIZE``
    (torchrun sets them; MPI launchers do not). This sets each of them that is
    unset: the ranks from MPI, and rank 0's host (127.0.0.1 when the job is on
    one node) and port: rank 0's MASTER_PORT when it is set, else the port of a
    TCP store rank 0 opens here on a port the system chooses, which torch's
    store on rank 0 then shares (``TCPStore(multi_tenant=True)``, as
    ``init_process_group`` makes it). Collective over MPI_COMM_WORLD. Returns
    the values.
    """
    if all(os.environ.get(name) for name in _RENDEZVOUS):
        return {name: os.environ[name] for name in _RENDEZVOUS}
    rank, size, local_rank, local_size, root = _C.mpi_job(_rendezvous_of_rank0)
    host, port = root.split(" ")
    values = {
        "RANK": rank,
        "WORLD_SIZE": size,
        "LOCAL_RANK": local_rank,
        "LOCAL_WORLD_SIZE": local_size,
        "MASTER_ADDR": "127.0.0.1" if local_size == size else host,
        "MASTER_PORT": port,
    }
    for name, value in values.items():
        if not os.environ.get(name):
            os.environ[name] = str(value)
    return {name: os.environ[name] for name in _RENDEZVOUS}


def mpi_launcher():
    """The MPI launcher that started this process ("hydra", "openmpi", "slurm", ...), or "" when none did.

    Without one (torchrun, Lightning's own launcher, plain copies), the first
    group brings MPI up itself through torch's Store (docs/launch.md).
    """
    return _C.mpi_launcher()


def describe(group=None, device="cpu"):
    """What runs a group on a device: the pgstrategy backend and the rule that chose it, the layout,
    and the MPI library underneath."""
    text = _backend(group, device).describe(torch.device(device).type)
    return f"{text}; MPI: {mpi_library()}"


def mpi_library():
    """The MPI library this process runs with: the first line of its version
    text, and for a build that leaves MPI to the run time, the library loaded."""
    first_line = _C.mpi_library().split("\n")[0].strip()
    if first_line.startswith("MPICH Version:"):
        first_line = "MPICH " + first_line[len("MPICH Version:"):].strip()
    return f"{first_line} ({_MPI_LOADED})" if _MPI_LOADED else first_line


def abort(group=None):
    """Aborts a pgstrategy group on this rank, from any thread (``group.abort()``
    does the same): calls in flight on it raise within a fraction of a second,
    later calls raise, and ``destroy_process_group(group)`` frees what is local
    without waiting for peers (torchft's ``abort``). The peers are told: a peer's
    call on the group, the one it waits in or its next, raises naming this
    rank's abort, and its destroy is then local too. A peer on this node learns
    within a fraction of a second; one on another node once MPI delivers the
    notice, sent at once at MPI_THREAD_MULTIPLE (which the library asks for),
    else at this rank's destroy (docs/errors.md, "When a peer fails or aborts")."""
    (group if group is not None else dist.group.WORLD).abort()


def errored(group=None):
    """The group's first failure (an operation that failed, or the abort) as a
    ``torch.distributed.DistBackendError``, or None (torchft's ``errored``)."""
    message = _backend(group, "cpu").error()
    return dist.DistBackendError(message) if message else None


def backends():
    """The registered pgstrategy backends, comma-separated (plugins appear once loaded)."""
    return _C.backends()


def dump_trace():
    """Write this rank's flight-recorder dump now: the last operations of every group
    (PGS_TRACE=DIR, set before the groups were made; files DIR/pgstrategy-<job>-rank<R>.json,
    read by ``pg-trace DIR``). Raises when PGS_TRACE was not set."""
    _C.dump_trace()


def version():
    """The version of the pgstrategy library that is running, as (major, minor, patch)."""
    return _C.version()


register()
# Without an MPI launcher, Lightning's MPI detection must not make this
# process a 1-process MPI job before the backend brings the job up.
_launch.quiet_lightning_mpi_detection()
# Before Python tears down: no thread may release tensors after that, and the
# strategies go in the order they were made, on every rank alike.
atexit.register(_C.shutdown)

if "lightning.pytorch" in sys.modules or "pytorch_lightning" in sys.modules:
    from . import lightning  # noqa: E402,F401  (registers "ddp_pgstrategy")
