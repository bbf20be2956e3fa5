"""The torch backend's calls are recorded like any other (PGS_TRACE, docs/trace.md):
after a few all_reduce and broadcast calls, pgstrategy_torch.dump_trace() writes
each rank's dump, and every rank's dump holds those calls, finished, in order."""

import glob
import json
import os
import sys

import pgs_test
import torch
import torch.distributed as dist

pgs_test.start()
import pgstrategy_torch  # noqa: E402  (after the skip)

c = pgs_test.Checks("test_trace")
rank, size = dist.get_rank(), dist.get_world_size()
folder = pgs_test.trace_folder()
dist.barrier()
for i in range(3):
    t = torch.full((8,), float(rank + i))
    dist.all_reduce(t)
    c.equal(t, torch.full((8,), float(sum(range(size)) + size * i)), f"all_reduce {i}")
b = torch.full((4,), float(rank))
dist.broadcast(b, src=size - 1)
pgstrategy_torch.dump_trace()
dist.barrier()

dumps = [json.load(open(p)) for p in glob.glob(os.path.join(folder, "pgstrategy-*-rank*.json"))]
c.check(sorted(d["rank"] for d in dumps) == list(range(size)), f"one dump per rank: {[d['rank'] for d in dumps]}")
for d in dumps:
    ops = [e["op"] for s in d["strategies"] for e in s["entries"] if e.get("status") == "PG_OK"]
    c.check(ops.count("allreduce") >= 3 and "broadcast" in ops, f"rank {d['rank']} recorded {ops}")
sys.exit(c.finish())
