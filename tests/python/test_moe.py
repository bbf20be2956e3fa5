"""A mixture-of-experts layer with top-2 routing whose expert dispatch and
combine go through uneven all_to_all_single on the "pgstrategy" backend (two
experts per rank, a different number of tokens on each rank), forward and
backward, against the same computation on one process over every rank's
tokens: outputs, the gradients of this rank's experts and of the gate, within
1e-10 (float64)."""

import sys

import torch
import torch.distributed as dist
from torch.distributed._functional_collectives import all_to_all_single_autograd

import pgs_test

DIM, PER_RANK, TOP = 8, 2, 2


def parameters(size):
    """The gate and every expert, the same on every rank (seeded)."""
    g = torch.Generator().manual_seed(5)
    experts = size * PER_RANK
    gate = torch.randn(DIM, experts, generator=g, dtype=torch.float64)
    weights = torch.randn(experts, DIM, DIM, generator=g, dtype=torch.float64) / DIM ** 0.5
    bias = torch.randn(experts, DIM, generator=g, dtype=torch.float64)
    return gate, weights, bias


def tokens(q):
    """Rank q's tokens: 5 + 3q of them."""
    g = torch.Generator().manual_seed(100 + q)
    return torch.randn(5 + 3 * q, DIM, generator=g, dtype=torch.float64)


def route(x, gate):
    """Top-2 experts of each token and their weights (softmax over the two)."""
    scores, experts = (x @ gate).topk(TOP, dim=1)
    return experts, scores.softmax(dim=1)


def moe_distributed(x, gate, weights, bias, rank, size):
    experts, w = route(x, gate)
    # One row per (token, choice), sent to the rank that holds the expert.
    slot_expert = experts.reshape(-1)
    slot_token = torch.arange(x.shape[0]).repeat_interleave(TOP)
    order = torch.argsort(slot_expert // PER_RANK, stable=True)
    slot_expert, slot_token = slot_expert[order], slot_token[order]
    send_splits = torch.bincount(slot_expert // PER_RANK, minlength=size)
    recv_splits = torch.empty_like(send_splits)
    dist.all_to_all_single(recv_splits, send_splits)  # how many rows each rank sends here
    send_splits, recv_splits = send_splits.tolist(), recv_splits.tolist()
    rows = all_to_all_single_autograd(x[slot_token], recv_splits, send_splits, dist.group.WORLD)
    ids = torch.empty(sum(recv_splits), dtype=torch.int64)
    dist.all_to_all_single(ids, slot_expert.contiguous(), recv_splits, send_splits)
    # This rank's experts on the rows that arrived.
    out_rows = torch.zeros_like(rows)
    for e in range(rank * PER_RANK, (rank + 1) * PER_RANK):
        mine = ids == e
        out_rows = out_rows.index_put((mine.nonzero().squeeze(1),), rows[mine] @ weights[e].T + bias[e])
    # Back to where the rows came from, weighted and summed per token.
    back = all_to_all_single_autograd(out_rows, send_splits, recv_splits, dist.group.WORLD)
    chosen = w.reshape(-1)[order]
    return torch.zeros_like(x).index_add(0, slot_token, back * chosen.unsqueeze(1))


def moe_reference(x, gate, weights, bias):
    experts, w = route(x, gate)
    out = torch.zeros_like(x)
    for k in range(TOP):
        e = experts[:, k]
        out = out + w[:, k:k + 1] * (torch.einsum("td,tod->to", x, weights[e]) + bias[e])
    return out


def main():
    pgs_test.start()
    rank, size = dist.get_rank(), dist.get_world_size()
    c = pgs_test.Checks(f"test_moe on {size} ranks")

    def check(c):
        gate, weights, bias = parameters(size)
        # Distributed: this rank's tokens; gradients of the shared parameters.
        g, wt, b = (t.clone().requires_grad_() for t in (gate, weights, bias))
        x = tokens(rank)
        out = moe_distributed(x, g, wt, b, rank, size)
        (out ** 2).sum().backward()
        # Reference: every rank's tokens on one process.
        rg, rw, rb = (t.clone().requires_grad_() for t in (gate, weights, bias))
        everything = torch.cat([tokens(q) for q in range(size)])
        ref = moe_reference(everything, rg, rw, rb)
        (ref ** 2).sum().backward()
        start = sum(5 + 3 * q for q in range(rank))
        err = (out - ref[start:start + x.shape[0]]).abs().max().item()
        c.check(err <= 1e-10, f"output {err:.3g} from the single-process reference")
        # This rank's experts got the gradient of every token routed to them.
        mine = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
        for name, got, want in (("weights", wt.grad[mine], rw.grad[mine]), ("bias", b.grad[mine], rb.grad[mine])):
            err = (got - want).abs().max().item()
            c.check(err <= 1e-10, f"gradient of this rank's expert {name}: {err:.3g} from the reference")
        # The gate's gradient, summed over ranks, is the reference's.
        gate_grad = g.grad.clone()
        dist.all_reduce(gate_grad)
        err = (gate_grad - rg.grad).abs().max().item()
        c.check(err <= 1e-10, f"gate gradient summed over ranks: {err:.3g} from the reference")

    c.run(check)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
