#!/usr/bin/env python3
"""The short table run-device-checks.sh prints last.

    device_table.py --tests gpu-tests.log --gpu NAME overhead.csv bandwidth.csv staged.csv

From CTest's output: each GPU test and how it ended. From pg-bench's CSVs
(missing files are reported as not run): the time of pg_allreduce through
nccl against ncclAllReduce at 8 B (goal: at most 2 us more); both from
1 MiB to 1 GiB; fairring's pipeline staged through pinned host memory against
the pinned host<->device copy ceiling (goal: at least 0.8 of it) and against
MPI alone on host memory. Out-of-place rows, medians over repetitions.
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
from ratios import human  # noqa: E402  (pg-bench's size names)


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", required=True)
    ap.add_argument("--gpu", default="")
    ap.add_argument("overhead")
    ap.add_argument("bandwidth")
    ap.add_argument("staged")
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
    if os.path.exists(args.bandwidth):
        t = times(args.bandwidth)
        for size in sorted({b for _, b in t}):
            pg, raw, copy = t.get(("nccl", size)), t.get(("nccl-raw", size)), t.get(("memcpy", size))
            cells = [f"{human(size):>8}"]
            cells.append(f"nccl {pg:10.1f}" if pg else "nccl        -")
            cells.append(f"nccl-raw {raw:10.1f}" if raw else "nccl-raw        -")
            cells.append(f"memcpy(d2d) {copy:10.1f}" if copy else "")
            if pg and raw:
                cells.append(f"ratio {pg / raw:.3f}")
            print("  " + "  ".join(c for c in cells if c))
    else:
        print("  not run")

    print("# fairring staged through pinned host memory, 2 virtual nodes sharing the GPU: time in us;")
    print("#   ceiling = memcpy-pinned time / fairring time (goal >= 0.8); mpi-raw: MPI alone on host memory")
    if os.path.exists(args.staged):
        t = times(args.staged)
        for size in sorted({b for _, b in t}):
            fr, copy, mpi = t.get(("fairring", size)), t.get(("memcpy-pinned", size)), t.get(("mpi-raw", size))
            cells = [f"{human(size):>8}"]
            cells.append(f"fairring {fr:10.1f}" if fr else "fairring        -")
            cells.append(f"memcpy-pinned {copy:10.1f}" if copy else "memcpy-pinned        -")
            cells.append(f"mpi-raw {mpi:10.1f}" if mpi else "mpi-raw        -")
            if fr and copy:
                ratio = copy / fr
                cells.append(f"ceiling {ratio:.2f} ({'met' if ratio >= 0.8 else 'missed'})")
            print("  " + "  ".join(cells))
    else:
        print("  not run")


if __name__ == "__main__":
    main()
