#!/usr/bin/python3
"""Ratios between backends from a pg-bench CSV, over a range of sizes.

    pg-bench-ratios results.csv [more.csv ...] [--baseline mpi-raw] [--min 4K] [--max 256M]

For each collective, backend and placement: per size, the median over
repetitions of busbw(backend) / busbw(baseline), each ratio taken within one
repetition (pg-bench interleaves backends per size, so both were measured side
by side); then the median, minimum and maximum of those over the sizes in
[min, max]. Time ratios are the inverses (between backends whose busbw has the
same factor: not against memcpy). Standard library only.
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict

from pg_bench_sizes import human_bytes, size_arg  # next to this script, in the source tree and installed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--baseline", default="mpi-raw", help="backend to divide by (default mpi-raw)")
    ap.add_argument("--min", type=size_arg, default=0,
                    help="smallest size included, written as for pg-bench's -b (default all)")
    ap.add_argument("--max", type=size_arg, default=1 << 62, help="largest size included")
    ap.add_argument("--per-size", action="store_true", help="also print each size's ratio")
    args = ap.parse_args()

    # busbw[(collective, bytes, in_place, file, rep)][backend]
    busbw = defaultdict(dict)
    for index, path in enumerate(args.csv):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                nbytes = int(row["bytes"])
                if args.min <= nbytes <= args.max:
                    key = (row["collective"], nbytes, int(row["in_place"]), index, row.get("rep", "0"))
                    busbw[key][row["backend"]] = float(row["busbw"])

    # per_size[(collective, backend, in_place)][bytes] = [ratio per repetition]
    per_size = defaultdict(lambda: defaultdict(list))
    for (coll, nbytes, ip, _file, _rep), by_backend in busbw.items():
        base = by_backend.get(args.baseline)
        if not base:
            continue
        for backend, bw in by_backend.items():
            if backend != args.baseline and bw > 0:
                per_size[(coll, backend, ip)][nbytes].append(bw / base)
    if not per_size:
        sys.exit(f"{', '.join(args.csv)}: no size in range where both '{args.baseline}' and another backend ran")

    print(f"# busbw ratio to {args.baseline}: median over repetitions per size, then over sizes")
    print(f"# {'collective':<15} {'backend':<12} {'placement':<12} {'sizes':>5} {'reps':>4} "
          f"{'median':>7} {'min':>7} {'max':>7} {'time ratio':>10}")
    for (coll, backend, ip), sizes in sorted(per_size.items()):
        ratios = [statistics.median(v) for _, v in sorted(sizes.items())]
        reps = min(len(v) for v in sizes.values())
        med = statistics.median(ratios)
        print(f"  {coll:<15} {backend:<12} {'in-place' if ip else 'out-of-place':<12} "
              f"{len(ratios):>5} {reps:>4} {med:>7.3f} {min(ratios):>7.3f} {max(ratios):>7.3f} "
              f"{1 / med:>10.3f}")
    if args.per_size:
        print(f"# per size: median over repetitions of busbw / {args.baseline} busbw")
        for (coll, backend, ip), sizes in sorted(per_size.items()):
            cells = "  ".join(f"{human_bytes(b)}: {statistics.median(v):.3f}" for b, v in sorted(sizes.items()))
            print(f"  {coll} {backend} {'in-place' if ip else 'out-of-place'}: {cells}")


if __name__ == "__main__":
    main()
