#!/usr/bin/env python3
"""The short table run-device-checks.sh prints last.

    device_table.py --tests gpu-tests.log --gpu NAME overhead.csv bandwidth.csv staged.csv [scaling-N.csv ...]

From CTest's output: each GPU test and how it ended. From pg-bench's CSVs
(missing files are reported as not run): the time of pg_allreduce through
nccl against ncclAllReduce at 8 B (goal: at most 2 us more); both from
1 MiB to 1 GiB; fairring's pipeline staged through pinned host memory against
the pinned host<->device copy ceiling (goal: at least 0.8 of it) and against
MPI alone on host memory; fairring on CPU against MPI alone as ranks per node
grow (one CSV per rank count). Out-of-place rows, medians over repetitions.
Standard library only.
"""
import argparse
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/pg-bench"))
from pg_bench_sizes import human_bytes  # noqa: E402  (sizes as pg-bench prints them)


def times(path):
    """{(backend, bytes): median time in us} of allreduce, out of place."""
    rows = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["collective"] == "allreduce" and row["in_place"] == "0":
                rows[(row["backend"], int(row["bytes"]))].append(float(row["time_us"]))
    return {key: statistics.median(v) for key, v in rows.items()}


def tests(path):
    """[(name, outcome)] from CTest's output."""
    found = []
    pattern = re.compile(r"Test +#\d+: (\S+) \.+\**\s*(Passed|\*\*\*Failed|Failed|\*\*\*Skipped|Skipped|\*\*\*Timeout|Timeout|Not Run)")
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = pattern.search(line)
                if m:
                    found.append((m.group(1), m.group(2).strip("*")))
    except OSError:
        pass
    return found


def size_rows(path, columns, verdict):
    """One line per size of the CSV at path: the time of each (backend, label)
    in columns ('-' where it did not run), then verdict({backend: time}) if any."""
    if not os.path.exists(path):
        print("  not run")
        return
    t = times(path)
    for size in sorted({b for _, b in t}):
        values = {backend: t.get((backend, size)) for backend, _ in columns}
        cells = [f"{human_bytes(size):>8}"]
        cells += [f"{label} {values[b]:10.1f}" if values[b] else f"{label} {'-':>10}" for b, label in columns]
        tail = verdict(values)
        if tail:
            cells.append(tail)
        print("  " + "  ".join(cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", required=True)
    ap.add_argument("--gpu", default="")
    ap.add_argument("overhead")
    ap.add_argument("bandwidth")
    ap.add_argument("staged")
    ap.add_argument("scaling", nargs="*", help="scaling-<ranks>.csv: fairring and mpi-raw on CPU")
    args = ap.parse_args()

    print("#")
    print(f"# device check: {args.gpu}")
    print("# tests (ctest -L gpu)")
    outcomes = tests(args.tests)
    if not outcomes:
        print("  none found in the CTest output")
    for name, outcome in outcomes:
        print(f"  {name:<48} {outcome}")

    print("# allreduce at 8 B, 1 rank: pg_allreduce through nccl against ncclAllReduce (goal: <= 2 us more)")
    if os.path.exists(args.overhead):
        t = times(args.overhead)
        pg, raw = t.get(("nccl", 8)), t.get(("nccl-raw", 8))
        if pg and raw:
            print(f"  nccl {pg:.2f} us, nccl-raw {raw:.2f} us: {pg - raw:+.2f} us per call "
                  f"({'met' if pg - raw <= 2 else 'missed'})")
        else:
            print("  a backend did not run")
    else:
        print("  not run")

    print("# allreduce 1 MiB to 1 GiB, 1 rank (a copy on one GPU): time in us, nccl / nccl-raw")
    size_rows(args.bandwidth, [("nccl", "nccl"), ("nccl-raw", "nccl-raw"), ("memcpy", "memcpy(d2d)")],
              lambda v: v["nccl"] and v["nccl-raw"] and f"ratio {v['nccl'] / v['nccl-raw']:.3f}")

    print("# fairring staged through pinned host memory, 2 virtual nodes sharing the GPU: time in us;")
    print("#   ceiling = memcpy-pinned time / fairring time (goal >= 0.8); mpi-raw: MPI alone on host memory")

    def ceiling(v):
        if not (v["fairring"] and v["memcpy-pinned"]):
            return None
        ratio = v["memcpy-pinned"] / v["fairring"]
        return f"ceiling {ratio:.2f} ({'met' if ratio >= 0.8 else 'missed'})"

    size_rows(args.staged, [("fairring", "fairring"), ("memcpy-pinned", "memcpy-pinned"),
                            ("mpi-raw", "mpi-raw")], ceiling)

    print("# fairring on CPU, ranks on one node: time in us, and fairring / mpi-raw (below 1: fairring faster)")
    if not args.scaling:
        print("  not run")
    def ranks(path):
        return int(re.sub(r"\D", "", os.path.basename(path)) or 0)

    for path in sorted(args.scaling, key=lambda p: (ranks(p), "tree" in p)):
        forced = " (the tree forced: PGS_FAIRRING_TREE_RANKS=2)" if "tree" in os.path.basename(path) else ""
        print(f"  {ranks(path)} ranks{forced}")
        size_rows(path, [("fairring", "fairring"), ("mpi-raw", "mpi-raw")],
                  lambda v: v["fairring"] and v["mpi-raw"] and f"ratio {v['fairring'] / v['mpi-raw']:.3f}")

if __name__ == "__main__":
    main()
