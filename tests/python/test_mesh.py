"""A 2-D DeviceMesh (dp x tp) on 4 ranks through the "pgstrategy" backend,
the default group bound to a device so that torch makes the subgroups by
splitting it (the backend's split): all_reduce and an uneven
all_to_all_single on each dimension's group, and new_group, checked against
values computed here."""

import sys

import torch
import torch.distributed as dist

import pgs_test


def main():
    pgs_test.start(device_id=torch.device("cpu", 0))
    from torch.distributed.device_mesh import init_device_mesh

    rank, size = dist.get_rank(), dist.get_world_size()
    c = pgs_test.Checks(f"test_mesh on {size} ranks")
    if size != 4:
        print("test_mesh needs 4 ranks", flush=True)
        return c.finish() or pgs_test.SKIP

    def mesh(c):
        m = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        layout = {"dp": [[0, 2], [1, 3]], "tp": [[0, 1], [2, 3]]}
        for name, groups in layout.items():
            group = m.get_group(name)
            members = next(g for g in groups if rank in g)
            t = torch.tensor([rank + 1.0])
            dist.all_reduce(t, group=group)
            c.equal(t, torch.tensor([float(sum(r + 1 for r in members))]), f"all_reduce on {name} {members}")
            # Uneven: the first member sends 1 row to itself and 2 to the other; the second 3 and 0.
            me = members.index(rank)
            send_rows = [[1, 2], [3, 0]][me]
            recv_rows = [[1, 2], [3, 0]][0][me], [[1, 2], [3, 0]][1][me]
            inp = torch.cat([torch.full((n, 2), float(10 * rank + j)) for j, n in enumerate(send_rows)])
            out = torch.empty(sum(recv_rows), 2)
            dist.all_to_all_single(out, inp, list(recv_rows), send_rows, group=group)
            want = torch.cat([torch.full((n, 2), float(10 * members[j] + me)) for j, n in enumerate(recv_rows)])
            c.equal(out, want, f"uneven all_to_all_single on {name} {members}")

    def subgroup(c):
        group = dist.new_group([1, 2, 3])
        if rank == 0:
            c.check(group == dist.GroupMember.NON_GROUP_MEMBER, "rank 0 is outside new_group([1, 2, 3])")
            return
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=group)
        c.equal(t, torch.tensor([6.0]), "all_reduce on new_group([1, 2, 3])")

    c.run(mesh)
    c.run(subgroup)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
