"""How the backend behaves where torch's own backends set the rules: works
dropped or timed out, aborts with a late peer, threads, subgroups. Each part
runs on a pair group of ranks 0 and 1 of its own (the verdict goes over the
default group) and is bounded: a part still running after 60 s fails the
test (a hang is a failure, never a CTest timeout).

  dropped    each rank isends 64 MiB to the other and drops the handle, then
             receives: the dropped sends finish in the background
  future     a DDP step whose peer never comes fails at the group's timeout
             (2 s) with DistBackendError, and errored() says so
  expired    an all_gather into a list whose future failed at the group's
             timeout (1 s) while rank 1 is 3 s late: a wait of 1.5 s times
             out, a second wait finishes it, and the copies into the list ran
  alloc      allocate_tensor's agreement: rank 1's call, waiting for rank 0,
             raises naming rank 0's abort (0.5 s later) within 5 s, and rank
             0's own call after it raises; on another pair, rank 1's call that
             rank 0 never joins ends within 1 s of rank 1's own abort from
             another thread
  late       rank 0 aborts with an irecv of 16 MiB posted that rank 1 sends
             to just before: the buffer MPI then fills is still the
             receive's, never memory torch has handed out again
  splits     all_to_all_single with splits [2, 2] on rank 0 and [2, 3] on
             rank 1 (even on one rank only), under PGS_DEBUG=detail
  threads    one thread waits on an irecv while another posts the isend its
             peer waits for
  split      split_group leaving rank 1 out: rank 1 gets no group
  coalesce   torch's coalescing manager (two all_reduces and a broadcast as one
             work) and batch_isend_irecv (which coalesces through it)
  detail     (TORCH_DISTRIBUTED_DEBUG=DETAIL) errored() and describe() reach
             the backend through torch's checking wrapper

    mpiexec -n 2 python test_binding.py [part ...]   (default: all but detail)
"""

import datetime
import sys
import threading
import time

import pgs_test
import torch
import torch.distributed as dist

pgs_test.start()
import pgstrategy_torch  # noqa: E402  (after the skip)

c = pgs_test.Checks("test_binding")
rank = dist.get_rank()
peer = 1 - rank


def pair(seconds=None):
    timeout = datetime.timedelta(seconds=seconds) if seconds else None
    return dist.new_group([0, 1], timeout=timeout) if timeout else dist.new_group([0, 1])


def dropped(c):
    group = pair()
    n = 16 << 20  # 64 MiB of float32: a rendezvous send, which needs its receiver
    sent = torch.full((n,), float(rank + 1))
    dist.isend(sent, peer, group=group)  # the handle is dropped at once
    got = torch.zeros(n)
    dist.recv(got, peer, group=group)
    c.check(bool((got == peer + 1).all()), "the message of the dropped send arrived whole")
    dist.barrier(group=group)
    dist.destroy_process_group(group)


def future(c):
    group = pair(seconds=2)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8), process_group=group)
    if rank == 0:
        began = time.monotonic()
        try:
            model(torch.ones(4, 8)).sum().backward()
            outcome = None
        except Exception as error:  # noqa: BLE001 - the type and message are checked
            outcome = error
        took = time.monotonic() - began
        c.check(isinstance(outcome, dist.DistBackendError) and "timed out" in str(outcome),
                f"the step raises DistBackendError, timed out: {outcome!r}")
        c.check(1.5 < took < 10, f"at the group's timeout (2 s): {took:.2f} s")
        error = pgstrategy_torch.errored(group)
        c.check(error is not None and "timed out" in str(error), f"errored() after the timeout: {error!r}")
    # Rank 1 never takes the step; once rank 0 has seen the timeout the pair is given up on both.
    dist.barrier()
    pgstrategy_torch.abort(group)
    dist.destroy_process_group(group)


def expired(c):
    group = pair(seconds=1)
    n = 3
    mine = torch.arange(n, dtype=torch.float32) + 10 * rank
    got = [torch.zeros(n) for _ in range(2)]  # a list: gathered into one buffer, copied out once finished
    expected = [torch.arange(n, dtype=torch.float32) + 10 * r for r in range(2)]
    if rank == 0:
        work = dist.all_gather(got, mine, group=group, async_op=True)
        future = work.get_future()  # watched from now on: it fails at the group's timeout
        c.raises(lambda: work.wait(datetime.timedelta(seconds=1.5)), "timed out", "the first wait, rank 1 late")
        c.check(future.done(), "the future failed at the group's timeout (1 s)")
        began = time.monotonic()
        try:
            outcome = work.wait(datetime.timedelta(seconds=30))
        except Exception as error:  # noqa: BLE001 - reported
            outcome = error
        c.check(outcome is True, f"the second wait finishes the work once rank 1 joins: {outcome!r}")
        c.check(time.monotonic() - began < 10, f"the second wait: {time.monotonic() - began:.2f} s")
        c.check(work.is_success() and work.exception() is None,
                f"the work succeeded: is_success {work.is_success()}, exception {work.exception()!r}")
    else:
        time.sleep(3)
        dist.all_gather(got, mine, group=group)
    for r in range(2):
        c.equal(got[r], expected[r], f"rank {r}'s block, copied into the list")
    dist.destroy_process_group(group)


def alloc(c):
    n = 1 << 10
    cpu = torch.device("cpu")
    # A peer aborts while this rank waits for it: its own call raises, this rank's call learns of it.
    group = pair()
    backend = group._get_backend(cpu)
    first = backend.allocate_tensor(n, dtype=torch.float32, device=cpu)  # both: the pool grows together
    if rank == 0:
        time.sleep(0.5)
        pgstrategy_torch.abort(group)
        c.raises(lambda: backend.allocate_tensor(n, dtype=torch.float32, device=cpu), "abort",
                 "allocate_tensor after this rank's abort")
    else:
        began = time.monotonic()
        c.raises(lambda: backend.allocate_tensor(n, dtype=torch.float32, device=cpu), "rank 0 aborted",
                 "allocate_tensor whose peer aborted")
        c.check(time.monotonic() - began < 5, f"the peer's abort ends it: {time.monotonic() - began:.2f} s")
    del first
    dist.barrier()
    pgstrategy_torch.abort(group)
    dist.destroy_process_group(group)
    # Rank 0 never joins: rank 1's call ends at its own abort from another thread.
    group = pair()
    backend = group._get_backend(cpu)
    first = backend.allocate_tensor(n, dtype=torch.float32, device=cpu)
    if rank == 1:
        aborted_at = []

        def abort_later():
            time.sleep(0.5)
            aborted_at.append(time.monotonic())
            pgstrategy_torch.abort(group)

        thread = threading.Thread(target=abort_later)
        thread.start()
        c.raises(lambda: backend.allocate_tensor(n, dtype=torch.float32, device=cpu), "abort",
                 "allocate_tensor that rank 0 never joins, aborted")
        returned = time.monotonic()
        thread.join()
        c.check(returned - aborted_at[0] < 1.0, f"within 1 s of the abort: {returned - aborted_at[0]:.3f} s")
    del first
    dist.barrier()
    pgstrategy_torch.abort(group)
    dist.destroy_process_group(group)


def late(c):
    group = pair()
    n = 4 << 20  # 16 MiB
    if rank == 0:
        target = torch.zeros(n)
        work = dist.irecv(target, 1, group=group)
        time.sleep(1.0)  # rank 1 sends meanwhile; this rank calls no MPI
        pgstrategy_torch.abort(group)
        c.raises(work.wait, "abort", "the aborted irecv")
        del work, target  # whatever the library still needs it keeps
        probes = [torch.full((n,), 7.0) for _ in range(4)]  # memory torch hands out again
        dist.barrier()  # MPI moves now: rank 1's message lands
        time.sleep(0.5)
        dist.barrier()
        c.check(all(bool((p == 7.0).all()) for p in probes), "memory handed out after the abort stays untouched")
    else:
        time.sleep(0.5)
        work = dist.isend(torch.full((n,), 3.0), 0, group=group)
        try:
            work.wait()  # ends with rank 0's abort, or once its message has gone
        except Exception:  # noqa: BLE001 - either is right here
            pass
        dist.barrier()
        dist.barrier()
        pgstrategy_torch.abort(group)
    dist.destroy_process_group(group)


def splits(c):
    group = pair()
    # Rank 0 sends 2 rows to each rank; rank 1 sends 2 to rank 0 and 3 to itself.
    send_splits = [2, 2] if rank == 0 else [2, 3]
    recv_splits = [2, 2] if rank == 0 else [2, 3]
    rows = torch.arange(sum(send_splits), dtype=torch.float32) + 100 * rank
    out = torch.zeros(sum(recv_splits))
    dist.all_to_all_single(out, rows, recv_splits, send_splits, group=group)
    expected = (torch.tensor([0.0, 1, 100, 101]) if rank == 0 else torch.tensor([2.0, 3, 102, 103, 104]))
    c.equal(out, expected, "all_to_all_single with splits even on one rank only")
    dist.destroy_process_group(group)


def threads(c):
    group = pair()
    n = 4 << 20  # a rendezvous message
    got = torch.zeros(n)
    outcome = []

    def receive():
        try:
            dist.irecv(got, peer, group=group).wait()
            outcome.append(bool((got == peer).all()))
        except Exception as error:  # noqa: BLE001
            outcome.append(error)

    receiver = threading.Thread(target=receive)
    receiver.start()
    time.sleep(0.3)  # the receiver waits first, holding whatever it holds
    dist.isend(torch.full((n,), float(rank)), peer, group=group).wait()
    receiver.join()
    c.check(outcome == [True], f"the irecv on one thread and the isend on another both finish: {outcome}")
    dist.destroy_process_group(group)


def split(c):
    members = dist.split_group(split_ranks=[[0]])
    if rank == 0:
        c.check(members is not None and dist.get_world_size(members) == 1, "rank 0 gets its group of one")
        t = torch.ones(3)
        dist.all_reduce(t, group=members)
        c.equal(t, torch.ones(3), "an all_reduce on the group of one")
    else:
        c.check(members is None or members == dist.GroupMember.NON_GROUP_MEMBER,
                f"rank 1, left out, gets no group: {members!r}")


def coalesce(c):
    group = pair()
    a, b, r = torch.full((5,), rank + 1.0), torch.full((3,), 10.0 * (rank + 1)), torch.full((2,), float(rank))
    with dist._coalescing_manager(group, device=torch.device("cpu"), async_ops=True) as manager:
        dist.all_reduce(a, group=group)
        dist.all_reduce(b, group=group)
    manager.wait()
    c.equal(a, torch.full((5,), 3.0), "the first all_reduce of the coalesced pair")
    c.equal(b, torch.full((3,), 30.0), "the second all_reduce of the coalesced pair")
    group._start_coalescing(torch.device("cpu"))
    dist.broadcast(r, 1, group=group)
    work = group._end_coalescing(torch.device("cpu"))
    work.get_future().wait()
    c.equal(r, torch.ones(2), "a broadcast coalesced through start/end, its future")
    sent, got = torch.full((4,), float(rank)), torch.zeros(4)
    ops = [dist.P2POp(dist.isend, sent, peer, group=group), dist.P2POp(dist.irecv, got, peer, group=group)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    c.equal(got, torch.full((4,), float(peer)), "batch_isend_irecv")
    dist.destroy_process_group(group)


def detail(c):
    group = pair()
    t = torch.ones(4)
    dist.all_reduce(t, group=group)
    sequence = torch.tensor([group._get_sequence_number_for_group()] * 2)
    dist.all_reduce(sequence[1:], op=dist.ReduceOp.MAX, group=group)
    dist.all_reduce(sequence[:1], op=dist.ReduceOp.MIN, group=group)
    c.check(sequence[0] == sequence[1] > 0, f"the group's sequence number, the same on every rank: {sequence.tolist()}")
    c.check(pgstrategy_torch.errored(group) is None, "errored() under DETAIL: None before any failure")
    c.check("backend" in pgstrategy_torch.describe(group), "describe() under DETAIL names the backend")
    dist.destroy_process_group(group)


PARTS = {"dropped": dropped, "future": future, "expired": expired, "alloc": alloc, "late": late, "splits": splits,
         "threads": threads, "split": split, "coalesce": coalesce, "detail": detail}


for name in sys.argv[1:] or [p for p in PARTS if p != "detail"]:
    c.bounded(PARTS[name])
sys.exit(c.finish())
