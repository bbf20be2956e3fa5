"""ProcessGroup.abort from another thread ends an all_reduce blocked on a peer
(the abort/errored contract fault-tolerant trainers build on). On a group of
ranks 0 and 1, rank 0's all_reduce waits for rank 1, which comes 2 s late;
another thread of rank 0 aborts the group after 0.3 s: the all_reduce raises
within 1 s, errored() returns the error, later calls raise, and destroying the
group returns at once. Rank 1 joins late: its all_reduce raises at once,
naming rank 0's abort (the peers of an aborted rank learn of it), and the
same follows. The verdict goes over the default group, untouched."""

import sys
import threading
import time

import pgs_test
import torch
import torch.distributed as dist

pgs_test.start()
import pgstrategy_torch  # noqa: E402  (after the skip)

c = pgs_test.Checks("test_abort")
rank = dist.get_rank()
group = dist.new_group([0, 1])
t = torch.ones(1 << 10)
if rank < 2:
    dist.all_reduce(t, group=group)
    c.check(pgstrategy_torch.errored(group) is None, "no error before the abort")
    if rank == 1:
        time.sleep(2)
    aborted_at = []

    def abort_later(delay):
        time.sleep(delay)
        aborted_at.append(time.monotonic())
        pgstrategy_torch.abort(group)

    thread = threading.Thread(target=abort_later, args=(0.3,))
    if rank == 0:
        thread.start()
    entered = time.monotonic()
    try:
        dist.all_reduce(t, group=group)
        outcome = None
    except Exception as error:  # noqa: BLE001 - the message is checked
        outcome = error
    returned = time.monotonic()
    if rank == 0:
        thread.join()
        c.check(outcome is not None and "abort" in str(outcome), f"the all_reduce raises: {outcome!r}")
        c.check(returned - aborted_at[0] < 1.0, f"within 1 s of the abort: {returned - aborted_at[0]:.3f} s")
    else:
        c.check(outcome is not None and "rank 0 aborted" in str(outcome), f"the all_reduce raises: {outcome!r}")
        c.check(returned - entered < 1.0, f"within 1 s: {returned - entered:.3f} s")
    error = pgstrategy_torch.errored(group)
    c.check(isinstance(error, dist.DistBackendError) and "abort" in str(error), f"errored(): {error!r}")
    c.raises(lambda: dist.all_reduce(t, group=group), "abort", "an all_reduce after the abort")
    started = time.monotonic()
    dist.destroy_process_group(group)
    c.check(time.monotonic() - started < 1.0, f"destroy after the abort: {time.monotonic() - started:.3f} s")
sys.exit(c.finish())
