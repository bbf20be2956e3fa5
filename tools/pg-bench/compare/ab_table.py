#!/usr/bin/python3
"""The table of ab.sh: two revisions' pg-bench jobs, row by row.

    ab_table.py DIR JOBS

DIR holds run-a-<i>.csv and run-b-<i>.csv (i < JOBS), jobs of the same sweep
run alternated. Per row (backend, collective, size, placement): each job's
time is its median over the job's repetitions; A and B are the medians over
their jobs with [min-max]; B/A is the median of the ratios of jobs i of A and
B (run one after the other, in turns A first and B first) with [min-max].
Below 1: B is faster.
"""
import csv
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pg_bench_sizes import human_bytes  # noqa: E402  (sizes as pg-bench prints them)


def job_times(path):
    """{(backend, collective, bytes, in_place): median time over the job's repetitions}"""
    times = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["backend"], row["collective"], int(row["bytes"]), int(row["in_place"]))
            times[key].append(float(row["time_us"]))
    return {key: statistics.median(t) for key, t in times.items()}


def spread(values, digits):
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main():
    folder, jobs = sys.argv[1], int(sys.argv[2])
    runs = {side: [job_times(os.path.join(folder, f"run-{side}-{i}.csv")) for i in range(jobs)] for side in "ab"}
    keys = sorted(set().union(*runs["a"], *runs["b"]), key=lambda k: (k[1], k[0], k[2], k[3]))
    print(f"{'collective':<15} {'backend':<10} {'size':>9} {'place':<6} {'A time (us)':>27} "
          f"{'B time (us)':>27} {'B/A':>21}")
    for key in keys:
        a = [job[key] for job in runs["a"] if key in job]
        b = [job[key] for job in runs["b"] if key in job]
        ratios = [y[key] / x[key] for x, y in zip(runs["a"], runs["b"]) if key in x and key in y and x[key] > 0]
        if not a or not b or not ratios:
            continue
        backend, collective, nbytes, in_place = key
        print(f"{collective:<15} {backend:<10} {human_bytes(nbytes):>9} {'ip' if in_place else 'oop':<6} "
              f"{spread(a, 2):>27} {spread(b, 2):>27} {spread(ratios, 3):>21}")


if __name__ == "__main__":
    main()
