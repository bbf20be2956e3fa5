"""What the PyTorch backend's tests share: the skip, the start, the verdict.

A test that cannot import torch (or the package) exits 77, which CTest
reports as skipped. Every rank reaches the same verdict: the failures of all
ranks are summed (over the group under test and, independently of it, by the
exit status of each rank), and the test passes only when there are none.
"""

import glob
import os
import sys
import threading
import traceback

SKIP = 77

try:
    import torch
    import torch.distributed as dist
except ImportError as error:  # torch missing or broken: report, never pass
    print(f"SKIP: torch cannot be imported here: {error}", flush=True)
    sys.exit(SKIP)


class Checks:
    def __init__(self, name):
        self.name = name
        self.failures = []

    def check(self, ok, what):
        if not ok:
            self.failures.append(what)
            print(f"[rank {dist.get_rank() if dist.is_initialized() else '?'}] FAIL: {what}", flush=True)
        return ok

    def equal(self, got, expected, what):
        same = got.dtype == expected.dtype and got.shape == expected.shape and torch.equal(got, expected)
        return self.check(same, f"{what}: got {got.flatten()[:8].tolist()} ({got.dtype}), expected "
                                f"{expected.flatten()[:8].tolist()} ({expected.dtype})")

    def raises(self, call, expected_text, what):
        """call() must raise an exception whose message contains expected_text."""
        try:
            call()
        except Exception as error:  # noqa: BLE001 - the type is checked through the message
            message = str(error)
            return self.check(expected_text in message, f"{what}: raised {type(error).__name__}: {message!r}, "
                                                        f"expected one containing {expected_text!r}")
        return self.check(False, f"{what}: raised nothing, expected {expected_text!r}")

    def run(self, function, *args):
        """Runs one part of the test; an exception there is a failure, not a crash."""
        try:
            function(self, *args)
        except Exception:  # noqa: BLE001
            self.check(False, f"{function.__name__}{args}: {traceback.format_exc()}")

    def bounded(self, function, seconds=60):
        """run(function), but one still running after `seconds` fails the test and
        ends the process (a hang is a failure, never a CTest timeout)."""
        done = threading.Event()

        def watch():
            if not done.wait(seconds):
                print(f"[rank {dist.get_rank()}] FAIL: {function.__name__} still running after {seconds} s", flush=True)
                os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
        self.run(function)
        done.set()

    def finish(self, group=None):
        """Every rank's failures summed over the group; exit 0 only when there are none."""
        local = len(self.failures)
        total = torch.tensor([local], dtype=torch.int64)
        try:
            dist.all_reduce(total, group=group)
        except Exception as error:  # noqa: BLE001
            print(f"[rank {dist.get_rank()}] the verdict could not be agreed: {error}", flush=True)
            total = torch.tensor([local + 1])
        bad = int(total.item()) or local
        if dist.get_rank() == 0:
            print(f"{self.name}: {'OK' if bad == 0 else f'{bad} failure(s)'}", flush=True)
        dist.destroy_process_group()
        sys.stdout.flush()
        return 1 if bad else 0


def trace_folder():
    """PGS_TRACE's folder, without this rank's dumps of an earlier run."""
    folder = os.environ["PGS_TRACE"]
    for old in glob.glob(os.path.join(folder, f"pgstrategy-*-rank{dist.get_rank()}.json")):
        os.remove(old)
    return folder


def start(**init):
    """Imports the package (or skips), fills torch's rendezvous from MPI, makes the default group."""
    try:
        import pgstrategy_torch
    except ImportError as error:
        print(f"SKIP: pgstrategy_torch cannot be imported: {error}", flush=True)
        sys.exit(SKIP)
    pgstrategy_torch.mpi_env()
    dist.init_process_group("pgstrategy", **init)
    return pgstrategy_torch
