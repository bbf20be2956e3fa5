"""Uneven and coalesced collectives through the "pgstrategy" backend, on CPU:
all_to_all_single with uneven splits (and with autograd), all_to_all and
all_gather / reduce_scatter with lists whose sizes differ per rank, the
coalesced all-gather and reduce-scatter FSDP2 issues, batch_isend_irecv, and
subgroups made by splitting. Every result against values computed here."""

import sys

import torch
import torch.distributed as dist

import pgs_test

DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]


def value(q, r, i, dtype):
    """Element i of the block rank q sends to rank r: small integers, exact in every dtype."""
    return torch.tensor([(q * 31 + r * 7 + k) % 97 for k in i], dtype=dtype)


def splits_matrix(size, pattern):
    """rows[q][r]: rows rank q sends to rank r (the same on every rank)."""
    g = torch.Generator().manual_seed(1234 + pattern)
    if pattern == 0:
        return [[(q * 5 + r * 3) % 4 for r in range(size)] for q in range(size)]  # zeros included
    if pattern == 1:
        return [[0 if q == size - 1 else r + 2 for r in range(size)] for q in range(size)]  # a silent rank
    if pattern == 2:
        return [[(3 * size if r == size - 1 else 0) if q == 0 else 1 + q for r in range(size)] for q in range(size)]
    return torch.randint(0, 6, (size, size), generator=g).tolist()


def all_to_all_single(c, rank, size):
    for pattern in range(4):
        rows = splits_matrix(size, pattern)
        for dtype in DTYPES:
            width = 3
            send = [value(rank, r, range(rows[rank][r] * width), dtype).view(-1, width) for r in range(size)]
            inp = torch.cat(send)
            out = torch.full((sum(rows[q][rank] for q in range(size)), width), -1).to(dtype)
            dist.all_to_all_single(out, inp, [rows[q][rank] for q in range(size)], [rows[rank][r] for r in range(size)])
            want = torch.cat([value(q, rank, range(rows[q][rank] * width), dtype).view(-1, width) for q in range(size)])
            c.equal(out, want, f"all_to_all_single pattern {pattern} {dtype}")
            # nonblocking, and only one side's splits given where the other is even
            work = dist.all_to_all_single(out, inp, [rows[q][rank] for q in range(size)],
                                          [rows[rank][r] for r in range(size)], async_op=True)
            work.wait()
            c.equal(out, want, f"all_to_all_single async pattern {pattern} {dtype}")
    # Bad splits: a message naming them.
    inp = torch.zeros(size + 1)
    c.raises(lambda: dist.all_to_all_single(torch.zeros(size + 1), inp, None, [1] * size), "input_split_sizes",
             "splits that do not add up")


def all_to_all_autograd(c, rank, size):
    """torch.distributed.nn's all_to_all_single: its backward is an uneven all_to_all_single too."""
    from torch.distributed.nn.functional import all_to_all_single as a2a
    rows = splits_matrix(size, 3)
    x = torch.arange(sum(rows[rank]) * 2, dtype=torch.float64).view(-1, 2).requires_grad_()
    out_rows = [rows[q][rank] for q in range(size)]
    out = torch.empty(sum(out_rows), 2, dtype=torch.float64)
    y = a2a(out, x, out_rows, rows[rank])
    (y * (rank + 1)).sum().backward()
    # Each row of x went to rank r, where it was scaled by r + 1.
    want = torch.cat([torch.full((rows[rank][r], 2), float(r + 1), dtype=torch.float64) for r in range(size)])
    c.equal(x.grad, want, "all_to_all_single backward")


def all_to_all_lists(c, rank, size):
    for dtype in (torch.int32, torch.float64, torch.bfloat16):
        rows = splits_matrix(size, 3)
        inputs = [value(rank, r, range(rows[rank][r]), dtype) for r in range(size)]
        outputs = [torch.full((rows[q][rank],), -1).to(dtype) for q in range(size)]
        dist.all_to_all(outputs, inputs)
        for q in range(size):
            c.equal(outputs[q], value(q, rank, range(rows[q][rank]), dtype), f"all_to_all from {q} {dtype}")


def all_gather_uneven(c, rank, size):
    for dtype in (torch.int64, torch.float32, torch.float16):
        sizes = [2 * q + (q % 2) for q in range(size)]  # rank 0 gives nothing
        mine = value(rank, 0, range(sizes[rank]), dtype)
        outputs = [torch.full((n,), -1).to(dtype) for n in sizes]
        dist.all_gather(outputs, mine)
        for q in range(size):
            c.equal(outputs[q], value(q, 0, range(sizes[q]), dtype), f"all_gather of rank {q}'s {sizes[q]} {dtype}")


def reduce_scatter_uneven(c, rank, size):
    for dtype, op in ((torch.int32, dist.ReduceOp.SUM), (torch.float64, dist.ReduceOp.MAX),
                      (torch.float32, dist.ReduceOp.AVG)):
        sizes = [3 + q for q in range(size)]
        inputs = [torch.arange(n, dtype=dtype) * (rank + 1) for n in sizes]
        out = torch.zeros(sizes[rank], dtype=dtype)
        dist.reduce_scatter(out, inputs, op=op)
        base = torch.arange(sizes[rank], dtype=torch.float64)
        total = {dist.ReduceOp.SUM: base * sum(range(1, size + 1)), dist.ReduceOp.MAX: base * size,
                 dist.ReduceOp.AVG: base * sum(range(1, size + 1)) / size}[op]
        c.equal(out, total.to(dtype), f"reduce_scatter {dtype} {op}")


def coalesced(c, rank, size):
    """FSDP2's shape of call: several all-gathers (then reduce-scatters) coalesced into one."""
    shapes = [(3,), (2, 5), (1,), (4, 1)]
    inputs = [torch.full(s, float(rank + 1 + k), dtype=torch.float64) for k, s in enumerate(shapes)]
    outputs = [torch.empty((size * s[0],) + s[1:], dtype=torch.float64) for s in shapes]
    with dist._coalescing_manager(async_ops=True) as cm:
        for o, i in zip(outputs, inputs):
            dist.all_gather_into_tensor(o, i)
    cm.wait()
    for k, (o, s) in enumerate(zip(outputs, shapes)):
        want = torch.cat([torch.full(s, float(q + 1 + k), dtype=torch.float64) for q in range(size)])
        c.equal(o, want, f"coalesced all_gather_into_tensor {k}")
    grads = [torch.arange(size * s[0] * (s[1] if len(s) > 1 else 1), dtype=torch.float64).view((size * s[0],) + s[1:])
             * (rank + 1) for s in shapes]
    shards = [torch.empty(s, dtype=torch.float64) for s in shapes]
    with dist._coalescing_manager(async_ops=True) as cm:
        for o, i in zip(shards, grads):
            dist.reduce_scatter_tensor(o, i, op=dist.ReduceOp.AVG)
    cm.wait()
    for k, (o, g) in enumerate(zip(shards, grads)):
        block = g.chunk(size)[rank] / (rank + 1) * sum(range(1, size + 1)) / size
        c.equal(o, block, f"coalesced reduce_scatter_tensor {k}")


def batch_p2p(c, rank, size):
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    send = torch.arange(5, dtype=torch.float32) + 10 * rank
    recv = torch.zeros(5)
    ops = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, recv, prv)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    c.equal(recv, torch.arange(5, dtype=torch.float32) + 10 * prv, "batch_isend_irecv around the ring")


def split(c, rank, size):
    """dist.split_group: the backend's own split (members only)."""
    halves = [list(range(0, size, 2)), list(range(1, size, 2))]
    halves = [h for h in halves if h]
    group = dist.split_group(split_ranks=halves)
    mine = halves[rank % 2]
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t, group=group)
    c.equal(t, torch.tensor([float(sum(r + 1 for r in mine))]), f"all_reduce on the split group {mine}")
    c.check(dist.get_world_size(group) == len(mine), "split group size")


def main():
    pgs_test.start()
    rank, size = dist.get_rank(), dist.get_world_size()
    c = pgs_test.Checks(f"test_uneven on {size} ranks")
    for part in (all_to_all_single, all_to_all_autograd, all_to_all_lists, all_gather_uneven, reduce_scatter_uneven,
                 coalesced, batch_p2p, split):
        c.run(part, rank, size)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
