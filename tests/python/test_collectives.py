"""Every collective the backend maps, for every dtype and reduction, against
exact expectations; non-contiguous and in-place tensors; futures; a subgroup;
bad calls raise the library's messages; a wait with a timeout on a late peer
raises and the group stays usable. Run under mpiexec with 2 and 3 ranks."""

import sys
import time
from datetime import timedelta

import pgs_test
import torch
import torch.distributed as dist

Op = dist.ReduceOp
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTEGERS = [torch.int8, torch.uint8, torch.int32, torch.uint32, torch.int64, torch.uint64]
DTYPES = INTEGERS + FLOATS + [torch.bool]


def ops_for(dtype):
    if dtype in FLOATS:
        return [Op.SUM, Op.PRODUCT, Op.MIN, Op.MAX, Op.AVG]
    return [Op.SUM, Op.PRODUCT, Op.MIN, Op.MAX, Op.BAND, Op.BOR, Op.BXOR]


def comparable(t):
    """torch compares few ops on unsigned 32/64-bit tensors: view them signed."""
    return t.view({torch.uint32: torch.int32, torch.uint64: torch.int64}.get(t.dtype, t.dtype))


def values(op, rank, size, n):
    """This rank's input for op, as int64: every result exact in every dtype."""
    i = torch.arange(n)
    if op == Op.PRODUCT:
        return torch.where(i % size == rank, 2, 1)  # ones and a single two
    if op in (Op.SUM, Op.AVG):
        return (rank + i) % 3
    return (rank * 7 + i * 3) % 97


def reduce_all(op, stack, dtype):
    size = stack.shape[0]
    if dtype == torch.bool:
        stack = stack % 2
    if op == Op.SUM:
        out = stack.sum(0)
    elif op == Op.PRODUCT:
        out = stack.prod(0)
    elif op == Op.MIN:
        out = stack.min(0).values
    elif op == Op.MAX:
        out = stack.max(0).values
    elif op == Op.AVG:
        wide = torch.float64 if dtype == torch.float64 else torch.float32
        return (stack.to(wide).sum(0) / size).to(dtype)
    else:
        out = stack[0].clone()
        for row in stack[1:]:
            out = {Op.BAND: torch.bitwise_and, Op.BOR: torch.bitwise_or, Op.BXOR: torch.bitwise_xor}[op](out, row)
    if dtype == torch.bool:
        out = out != 0
    return out.to(dtype)


def tagged(rank, n, dtype):
    """Data tagged with its source rank."""
    v = rank * 16 + torch.arange(n) % 16
    return (v % 2 != 0) if dtype == torch.bool else v.to(dtype)


def reductions(c, rank, size):
    n = 2 * size + 1
    for dtype in DTYPES:
        for op in ops_for(dtype):
            stack = torch.stack([values(op, r, size, n) for r in range(size)])
            src = stack[rank] % 2 != 0 if dtype == torch.bool else stack[rank].to(dtype)
            t = src.clone()
            dist.all_reduce(t, op=op)
            c.equal(comparable(t), comparable(reduce_all(op, stack, dtype)), f"all_reduce {dtype} {op}")
        # reduce to rank 1 % size; reduce_scatter (list and tensor forms)
        stack = torch.stack([values(Op.SUM, r, size, n * size) for r in range(size)])
        mine = stack[rank] % 2 != 0 if dtype == torch.bool else stack[rank].to(dtype)
        total = reduce_all(Op.SUM, stack, dtype)
        t = mine.clone()
        dist.reduce(t, dst=1 % size, op=Op.SUM)
        c.equal(comparable(t), comparable(total if rank == 1 % size else mine), f"reduce {dtype}")
        out = torch.empty(n, dtype=dtype)
        dist.reduce_scatter(out, list(mine.clone().chunk(size)), op=Op.SUM)
        c.equal(comparable(out), comparable(total.chunk(size)[rank]), f"reduce_scatter {dtype}")
        out = torch.empty(n, dtype=dtype)
        dist.reduce_scatter_tensor(out, mine.clone(), op=Op.SUM)
        c.equal(comparable(out), comparable(total.chunk(size)[rank]), f"reduce_scatter_tensor {dtype}")


def data_movement(c, rank, size):
    n = 2 * size + 1
    for dtype in DTYPES:
        every = [tagged(r, n, dtype) for r in range(size)]
        joined = torch.cat(every)
        t = every[rank].clone()
        dist.broadcast(t, src=size - 1)
        c.equal(comparable(t), comparable(every[size - 1]), f"broadcast {dtype}")
        outs = [torch.empty(n, dtype=dtype) for _ in range(size)]
        dist.all_gather(outs, every[rank].clone())
        c.equal(comparable(torch.cat(outs)), comparable(joined), f"all_gather {dtype}")
        out = torch.empty(n * size, dtype=dtype)
        dist.all_gather_into_tensor(out, every[rank].clone())
        c.equal(comparable(out), comparable(joined), f"all_gather_into_tensor {dtype}")
        # alltoall: block p of rank r is tagged (r, p)
        blocks = lambda r: torch.cat([tagged(r * size + p, n, dtype) for p in range(size)])  # noqa: E731
        expected = torch.cat([tagged(r * size + rank, n, dtype) for r in range(size)])
        out = torch.empty(n * size, dtype=dtype)
        dist.all_to_all_single(out, blocks(rank))
        c.equal(comparable(out), comparable(expected), f"all_to_all_single {dtype}")
        outs = [torch.empty(n, dtype=dtype) for _ in range(size)]
        dist.all_to_all(outs, list(blocks(rank).chunk(size)))
        c.equal(comparable(torch.cat(outs)), comparable(expected), f"all_to_all {dtype}")
        root = size - 1
        gathered = [torch.empty(n, dtype=dtype) for _ in range(size)] if rank == root else None
        dist.gather(every[rank].clone(), gathered, dst=root)
        if rank == root:
            c.equal(comparable(torch.cat(gathered)), comparable(joined), f"gather {dtype}")
        out = torch.empty(n, dtype=dtype)
        dist.scatter(out, [e.clone() for e in every] if rank == 0 else None, src=0)
        c.equal(comparable(out), comparable(every[rank]), f"scatter {dtype}")
        # a ring of point-to-point messages
        got = torch.empty(n, dtype=dtype)
        works = [dist.isend(every[rank].clone(), (rank + 1) % size), dist.irecv(got, (rank - 1) % size)]
        for w in works:
            w.wait()
        c.equal(comparable(got), comparable(every[(rank - 1) % size]), f"send/recv {dtype}")


def layouts(c, rank, size):
    for dtype in (torch.float32, torch.int64):
        base = torch.stack([torch.arange(3) + 10 * r for r in range(size)]).to(dtype)
        # non-contiguous: a transposed matrix and a strided slice
        t = (torch.arange(12).reshape(3, 4).to(dtype) + rank).t()
        expected = (torch.arange(12).reshape(3, 4).to(dtype) * size + sum(range(size))).t()
        dist.all_reduce(t)
        c.equal(t, expected, f"all_reduce of a transposed {dtype} matrix")
        whole = torch.full((8,), -1, dtype=dtype)
        view = whole[::2]
        view.copy_(base[rank, :1].expand(4) if rank == 0 else torch.zeros(4, dtype=dtype))
        dist.broadcast(view, src=0)
        c.equal(whole, torch.tensor([0, -1] * 4, dtype=dtype), f"broadcast into a strided {dtype} slice")
        # in place: the input is this rank's block of the output
        out = torch.zeros(3 * size, dtype=dtype)
        mine = out[3 * rank:3 * (rank + 1)]
        mine.copy_(base[rank])
        dist.all_gather_into_tensor(out, mine)
        c.equal(out, base.flatten(), f"in-place all_gather_into_tensor {dtype}")
    empty = torch.empty(0)
    dist.all_reduce(empty)
    c.check(empty.numel() == 0, "all_reduce of an empty tensor")
    # coalesced, through the backend object
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    tensors = [torch.ones(3) * (rank + 1), torch.ones(2, 2) * (rank + 1)]
    backend.allreduce_coalesced(tensors, dist.AllreduceCoalescedOptions()).wait()
    total = size * (size + 1) / 2
    c.check(all(torch.equal(t, torch.full_like(t, total)) for t in tensors), f"allreduce_coalesced: {tensors}")


def futures(c, rank, size):
    t = torch.full((5,), float(rank))
    work = dist.all_reduce(t, async_op=True)
    doubled = work.get_future().then(lambda f: f.value()[0] * 2)
    expected = torch.full((5,), float(sum(range(size))))
    c.equal(doubled.wait(), expected * 2, "a callback on the future of all_reduce")
    c.equal(t, expected, "the tensor of a future's all_reduce")
    c.check(work.is_completed(), "the work is complete once its future is")
    # synchronize() on a work nobody waited for, nor asked the future of
    t = torch.full((5,), float(rank))
    work = dist.all_reduce(t, async_op=True)
    work.synchronize()
    c.equal(t, expected, "all_reduce after synchronize()")
    # several in flight, completed by the completion thread, waited in reverse
    ts = [torch.full((1000,), float(rank + i)) for i in range(4)]
    futs = [dist.all_reduce(x, async_op=True).get_future() for x in ts]
    for i, f in reversed(list(enumerate(futs))):
        c.equal(f.wait()[0], torch.full((1000,), float(sum(range(size)) + size * i)), f"future {i} of 4")


def subgroups(c, rank, size, describe):
    members = [0, size - 1]
    group = dist.new_group(members)
    if rank in members:
        t = torch.ones(4)
        dist.all_reduce(t, group=group)
        c.equal(t, torch.full((4,), 2.0), "all_reduce on the subgroup of the first and last ranks")
        c.check(dist.get_group_rank(group, rank) == members.index(rank), "the subgroup's rank")
    t = torch.ones(1)
    dist.all_reduce(t)
    c.equal(t, torch.full((1,), float(size)), "all_reduce on the world after the subgroup")
    c.check("backend 'mpi'" in describe(), f"the world's strategy: {describe()}")
    c.check(dist.get_backend() == "pgstrategy", f"dist.get_backend(): {dist.get_backend()}")


def bad_calls(c, rank, size, pgstrategy_torch):
    c.raises(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.uint16)), "is not supported; supported:",
             "all_reduce of uint16")
    c.raises(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int16)), "is not supported; supported:",
             "all_reduce of int16")
    # torch sends complex sums as their real and imaginary parts
    z = torch.full((3,), complex(rank, 1), dtype=torch.complex64)
    dist.all_reduce(z)
    c.equal(z, torch.full((3,), complex(sum(range(size)), size), dtype=torch.complex64), "all_reduce of complex64")
    c.raises(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int32), op=Op.AVG), "PG_ERR_UNSUPPORTED",
             "AVG on int32 (the library refuses the pair)")
    # PREMUL_SUM: each input times the factor, then summed; the caller's input
    # of a reduce_scatter stays as it was
    p = torch.full((3,), rank + 1.0)
    dist.all_reduce(p, op=dist._make_nccl_premul_sum(0.5))
    c.equal(p, torch.full((3,), 0.5 * size * (size + 1) / 2), "all_reduce PREMUL_SUM(0.5)")
    given = torch.full((2 * size,), rank + 1.0)
    out = torch.zeros(2)
    dist.reduce_scatter_tensor(out, given, op=dist._make_nccl_premul_sum(torch.tensor([2.0])))
    c.equal(out, torch.full((2,), 2.0 * size * (size + 1) / 2), "reduce_scatter_tensor PREMUL_SUM(tensor 2.0)")
    c.equal(given, torch.full((2 * size,), rank + 1.0), "the reduce_scatter's input, untouched by the factor")
    c.raises(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist._make_nccl_premul_sum(2.0)),
             "needs a floating-point tensor", "PREMUL_SUM on int32")
    # float8 moves (as bytes) but does not reduce
    f8 = torch.full((4,), float(rank), dtype=torch.float32).to(torch.float8_e4m3fn)
    dist.broadcast(f8, 0)
    c.equal(f8.float(), torch.zeros(4), "broadcast of float8_e4m3fn")
    c.raises(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.float8_e5m2)), "do not reduce",
             "all_reduce of float8_e5m2")
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    opts = dist.BroadcastOptions()
    opts.rootRank = size
    c.raises(lambda: backend.broadcast([torch.zeros(3)], opts).wait(), "PG_ERR_INVALID_ARGUMENT",
             "broadcast from a root out of range")
    # the single-tensor forms' output: the input's dtype (and device)
    c.raises(lambda: dist.all_gather_into_tensor(torch.zeros(3 * size, dtype=torch.float64), torch.zeros(3)),
             "the output must be Float on cpu", "all_gather_into_tensor into another dtype")
    c.raises(lambda: dist.reduce_scatter_tensor(torch.zeros(3, dtype=torch.int32), torch.zeros(3 * size)),
             "the output must be Float on cpu", "reduce_scatter_tensor into another dtype")
    if torch.cuda.is_available():
        c.raises(lambda: dist.all_gather_into_tensor(torch.zeros(3 * size, device="cuda"), torch.zeros(3)),
                 "the output must be Float on cpu", "all_gather_into_tensor from cpu into cuda")
    rows = torch.zeros(size + 1)
    c.raises(lambda: dist.all_to_all_single(torch.zeros(size + 1), rows, [1] * (size - 1) + [2], [1] * size),
             "add up to", "all_to_all_single, splits that do not add up to the rows")
    c.raises(lambda: dist.new_group(list(range(size)), pg_options=pgstrategy_torch.Options(backend="nosuch")),
             "PG_ERR_UNKNOWN_BACKEND", "a group on a backend that does not exist")
    c.raises(lambda: dist.new_group(list(range(size)), pg_options=object()), "must be pgstrategy_torch.Options",
             "pg_options of another type")
    t = torch.ones(2)
    dist.all_reduce(t)
    c.equal(t, torch.full((2,), float(size)), "all_reduce after the bad calls")


def late_peer(c, rank, size):
    t = torch.ones(3)
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        started = time.monotonic()
        c.raises(lambda: work.wait(timeout=timedelta(seconds=0.3)), "timed out after 0.3 s",
                 "a wait of 0.3 s for a peer 1.5 s late")
        c.check(time.monotonic() - started < 1.2, "the timed-out wait returned in time")
        work.wait()
    else:
        time.sleep(1.5)
        dist.all_reduce(t)
    c.equal(t, torch.full((3,), float(size)), "the late all_reduce, waited for again")
    t = torch.ones(3)
    dist.all_reduce(t)
    c.equal(t, torch.full((3,), float(size)), "all_reduce after the timeout")


def main():
    pgstrategy_torch = pgs_test.start()
    rank, size = dist.get_rank(), dist.get_world_size()
    c = pgs_test.Checks(f"test_collectives ({size} ranks)")
    c.run(reductions, rank, size)
    c.run(data_movement, rank, size)
    c.run(layouts, rank, size)
    c.run(futures, rank, size)
    c.run(subgroups, rank, size, pgstrategy_torch.describe)
    c.run(bad_calls, rank, size, pgstrategy_torch)
    c.run(late_peer, rank, size)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
