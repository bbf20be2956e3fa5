"""The library as a torch backend written in Python, for measurement.

torch_backend.py --python-backend compares it with the extension: a c10d
Backend subclassed in Python (torch's PyBackend trampoline, as torch's own
nccl4py backend does) that calls the library's C API through ctypes, so it
links nothing of torch's C++ ABI. It has what the measured paths need
(all_reduce, broadcast, all_gather, barrier, works with futures for DDP) on
the `mpi` backend underneath, and nothing else: no timeouts, aborts, errors
beyond a message, or other collectives. Registered as "pgstrategy_py"; it
uses the libpgstrategy that pgstrategy_torch loaded.
"""

import ctypes
import queue
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend, ReduceOp

import pgstrategy_torch  # noqa: F401  (loads libpgstrategy and its MPI)


def _library():
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libpgstrategy.so" in path:
                return ctypes.CDLL(path)
    raise RuntimeError("pgstrategy_torch did not load libpgstrategy")


lib = _library()
_p, _n, _i, _work = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)
lib.pg_strategy_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p, _work]
lib.pg_iallreduce.argtypes = [_p, _p, _p, _n, _i, _i, _work]
lib.pg_ibroadcast.argtypes = [_p, _p, _n, _i, _i, _work]
lib.pg_iallgather.argtypes = [_p, _p, _p, _n, _i, _work]
lib.pg_ibarrier.argtypes = [_p, _work]
lib.pg_work_wait.argtypes = [_p, ctypes.c_double]
lib.pg_work_free.argtypes = [_p]
lib.pg_last_error.restype = ctypes.c_char_p
# pg_dtype and pg_op values (pg_strategy.h)
_DTYPES = {torch.int32: 2, torch.int64: 4, torch.float32: 8, torch.float64: 9}
_OPS = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MIN: 2, ReduceOp.MAX: 3, ReduceOp.AVG: 4}


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"pgstrategy_py: {what}: {lib.pg_last_error().decode()}")


class _Completions:
    """One thread completes the futures of works, in the order they started."""

    def __init__(self):
        self.works = queue.SimpleQueue()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            self.works.get()._finish()


_completions = None


class _Work(dist._Work):
    def __init__(self, handle, tensors):
        super().__init__()
        self._handle = handle
        self._tensors = tensors
        self._lock = threading.Lock()
        self._future = None

    def _finish(self):
        with self._lock:
            if self._handle is not None:
                handle, self._handle = self._handle, None
                _check(lib.pg_work_wait(handle, -1.0), "wait")
                lib.pg_work_free(handle)
        if self._future is not None and not self._future.done():
            self._future.set_result(self._tensors)

    def wait(self, timeout=None):
        self._finish()
        return True

    def is_completed(self):
        return self._handle is None

    def get_future(self):
        global _completions
        if self._future is None:
            self._future = torch.futures.Future()
            if _completions is None:
                _completions = _Completions()
            _completions.works.put(self)
        return self._future


class PythonBackend(Backend):
    def __init__(self, rank, size):
        super().__init__(rank, size)
        self._strategy = ctypes.c_void_p()
        _check(lib.pg_strategy_create(b"cpu", b"mpi", ctypes.byref(self._strategy)), "create")

    def getBackendName(self):
        return "pgstrategy_py"

    def _start(self, call, tensors, *args):
        work = ctypes.c_void_p()
        _check(call(self._strategy, *args, ctypes.byref(work)), call.__name__)
        return _Work(work, tensors)

    def allreduce(self, tensors, opts):
        t = tensors[0]
        return self._start(lib.pg_iallreduce, tensors, t.data_ptr(), t.data_ptr(), t.numel(), _DTYPES[t.dtype],
                           _OPS[opts.reduceOp.op])

    def broadcast(self, tensors, opts):
        t = tensors[0]
        return self._start(lib.pg_ibroadcast, tensors, t.data_ptr(), t.numel(), _DTYPES[t.dtype], opts.rootRank)

    def allgather(self, outputs, inputs, opts):
        t = inputs[0]
        flat = torch.empty(t.numel() * self.size(), dtype=t.dtype)
        self._start(lib.pg_iallgather, [flat], t.data_ptr(), flat.data_ptr(), t.numel(), _DTYPES[t.dtype]).wait()
        for i, out in enumerate(outputs[0]):
            out.copy_(flat[i * t.numel():(i + 1) * t.numel()].view_as(out))
        return _Work(None, outputs)

    def barrier(self, opts):
        return self._start(lib.pg_ibarrier, [])


dist.Backend.register_backend("pgstrategy_py", lambda opts, _: PythonBackend(opts.group_rank, opts.group_size),
                              extended_api=True, devices=["cpu"])
