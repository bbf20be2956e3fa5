"""torch.distributed.shrink_group on the backend, at 3 ranks: rank 2 is left
out and takes no part in any shrink (the survivors' new group is made by them
alone). Each part is bounded (60 s; a hang fails the test).

  subgroup  a group of all three shrunk to ranks 0 and 1 while rank 2 does
            nothing with it but abort it: sizes and ranks, an all_reduce on the new group,
            its sequence number the same on both; the old group's destroy is
            local (rank 2's, after an abort, too)
  abort     ranks 0 and 1 start an all_reduce that rank 2 never joins, then
            shrink with SHRINK_ABORT: the pending work fails (at its start
            where the other survivor's abort came first), the new group works
  default   the default group shrunk while rank 2 has aborted its own: the
            new default group of two reaches the verdict; rank 2's is its own
  gone      (run alone, with a launcher that lets a job go on when a rank
            ends early: MPICH's mpiexec -disable-auto-cleanup) rank 2's
            process ends without a word; the default group is shrunk to the
            other two, which go on

    mpiexec -n 3 python test_shrink.py
    mpiexec -disable-auto-cleanup -n 3 python test_shrink.py gone
"""

import os
import sys

import pgs_test
import torch
import torch.distributed as dist

pgs_test.start()

c = pgs_test.Checks("test_shrink")
rank = dist.get_rank()
EXCLUDED = 2


def survivors_check(group, what):
    """Sizes, ranks and an all_reduce of the shrunk group of ranks 0 and 1."""
    c.check(dist.get_world_size(group) == 2, f"{what}: the shrunk group has 2 ranks, got {dist.get_world_size(group)}")
    c.check(dist.get_rank(group) == rank, f"{what}: rank {rank} keeps its rank, got {dist.get_rank(group)}")
    t = torch.full((1000,), rank + 1.0)
    dist.all_reduce(t, group=group)
    c.equal(t, torch.full((1000,), 3.0), f"{what}: all_reduce on the shrunk group")
    sequence = torch.tensor([group._get_sequence_number_for_group()] * 2)
    dist.all_reduce(sequence[1:], op=dist.ReduceOp.MAX, group=group)
    dist.all_reduce(sequence[:1], op=dist.ReduceOp.MIN, group=group)
    c.check(sequence[0] == sequence[1] > 0, f"{what}: the sequence number, the same on both: {sequence.tolist()}")


def subgroup(c):
    group = dist.new_group([0, 1, 2])
    t = torch.ones(4)
    dist.all_reduce(t, group=group)
    c.equal(t, torch.full((4,), 3.0), "the group of three before the shrink")
    dist.barrier()  # an abort tells the peers, failing what they still have in flight with rank 2
    if rank == EXCLUDED:
        group.abort()  # what a rank that is left out does with its part: nothing waits for the others
        dist.destroy_process_group(group)
        return
    shrunk = dist.shrink_group([EXCLUDED], group=group)
    survivors_check(shrunk, "subgroup")
    dist.destroy_process_group(shrunk)


def abort(c):
    group = dist.new_group([0, 1, 2])
    if rank == EXCLUDED:
        dist.barrier()  # the others have shrunk: an abort now fails nothing of theirs
        group.abort()
        dist.destroy_process_group(group)
        return
    try:  # rank 2 never joins; the other survivor's abort, when it comes first, fails it at its start
        pending = dist.all_reduce(torch.ones(1 << 16), group=group, async_op=True)
    except dist.DistBackendError as error:
        c.check("aborted" in str(error), f"the all_reduce fails at its start with the abort: {error}")
        pending = None
    shrunk = dist.shrink_group([EXCLUDED], group=group, shrink_flags=dist.distributed_c10d.SHRINK_ABORT)
    if pending is not None:
        c.raises(lambda: pending.wait(), "abort", "the all_reduce rank 2 never joined, after SHRINK_ABORT")
    survivors_check(shrunk, "abort")
    dist.destroy_process_group(shrunk)
    dist.barrier()


def default(c):
    store = dist.distributed_c10d._get_default_store()
    if rank == EXCLUDED:
        store.wait(["shrunk"])  # an abort before would fail what the others still do on the group
        dist.group.WORLD.abort()
        return
    shrunk = dist.shrink_group([EXCLUDED])
    store.set("shrunk", "1")
    c.check(dist.group.WORLD is shrunk or dist.get_world_size() == 2,
            f"the shrunk group is the default one: world size {dist.get_world_size()}")
    survivors_check(shrunk, "default")


if sys.argv[1:] == ["gone"]:
    dist.barrier()
    if rank == EXCLUDED:
        os._exit(0)  # no destroy, no MPI_Finalize: the process is simply gone
    c.bounded(default)
    status = c.finish()
    os._exit(status)  # MPI_Finalize at exit would wait for rank 2

c.bounded(subgroup)
c.bounded(abort)
dist.barrier()
c.bounded(default)
if rank == EXCLUDED:  # out of the default group: its verdict is its own (and its exit status)
    bad = len(c.failures)
    print(f"[rank {rank}] test_shrink: {'OK' if not bad else f'{bad} failure(s)'}", flush=True)
    sys.exit(1 if bad else 0)
sys.exit(c.finish())
