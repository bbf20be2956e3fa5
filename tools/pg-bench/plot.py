#!/usr/bin/python3
"""Plot a pg-bench CSV: bus bandwidth (or algbw, or time) against size, one
line per backend, one panel per collective, log-scaled sizes.

    pg-bench-plot results.csv [more.csv ...] -o results.png [--placement oop|ip|both]
                  [--metric busbw|algbw|time_us]

Rows repeated over repetitions (-r) are reduced to their median, as pg-bench's
own table does; several CSVs (say, small sizes with many iterations and large
sizes with few) are read as one. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict

from pg_bench_sizes import human_bytes  # next to this script, in the source tree and installed

REQUIRED = ["backend", "collective", "bytes", "count", "dtype", "op", "in_place",
            "time_us", "algbw", "busbw", "wrong"]
LABELS = {"busbw": "bus bandwidth (GB/s)", "algbw": "algorithm bandwidth (GB/s)",
          "time_us": "time (us)"}


def load(paths, metric, placements):
    """{collective: {(backend, in_place): {bytes: median metric}}}, and each one's dtype/op."""
    values = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    dtypes = defaultdict(set)
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{path}: not a pg-bench CSV (missing columns: {', '.join(missing)})")
            for row in reader:
                ip = int(row["in_place"])
                if ip not in placements:
                    continue
                values[row["collective"]][(row["backend"], ip)][int(row["bytes"])].append(
                    float(row[metric]))
                dtypes[row["collective"]].add(
                    row["dtype"] + ("" if row["op"] == "none" else " " + row["op"]))
    medians = {coll: {key: {b: statistics.median(v) for b, v in sizes.items()}
                      for key, sizes in series.items()}
               for coll, series in values.items()}
    return medians, {coll: sorted(d) for coll, d in dtypes.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="CSV written by pg-bench --csv")
    ap.add_argument("-o", "--output", help="PNG to write (default: the first CSV's name with .png)")
    ap.add_argument("--placement", choices=["both", "oop", "ip"], default="both",
                    help="out-of-place (solid), in-place (dashed) or both (default)")
    ap.add_argument("--metric", choices=sorted(LABELS), default="busbw")
    ap.add_argument("--title", help="figure title")
    args = ap.parse_args()

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("pg-bench-plot needs matplotlib (Debian: apt-get install python3-matplotlib)")

    placements = {"both": (0, 1), "oop": (0,), "ip": (1,)}[args.placement]
    data, dtypes = load(args.csv, args.metric, placements)
    if not data:
        sys.exit(f"{', '.join(args.csv)}: no rows to plot")
    output = args.output or os.path.splitext(args.csv[0])[0] + ".png"

    colls = list(data)
    fig, axes = plt.subplots(len(colls), 1, figsize=(8, 3.6 * len(colls)), squeeze=False)
    backends = sorted({b for series in data.values() for b, _ in series})
    colors = {b: plt.cm.tab10(i % 10) for i, b in enumerate(backends)}
    for ax, coll in zip(axes[:, 0], colls):
        all_sizes = set()
        for (backend, ip), points in sorted(data[coll].items()):
            sizes = sorted(points)
            all_sizes.update(sizes)
            ax.plot(sizes, [points[s] for s in sizes], marker="o", markersize=3,
                    linestyle="--" if ip else "-", color=colors[backend],
                    label=f"{backend} ({'in-place' if ip else 'out-of-place'})")
        ax.set_xscale("log", base=2)
        if args.metric == "time_us":
            ax.set_yscale("log")
        ticks = sorted(all_sizes)
        step = max(1, len(ticks) // 10)
        ax.set_xticks(ticks[::step])
        ax.set_xticklabels([human_bytes(t) for t in ticks[::step]], rotation=30, fontsize=8)
        ax.set_xlabel("size")
        ax.set_ylabel(LABELS[args.metric])
        ax.set_title(f"{coll} ({', '.join(dtypes[coll])})", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(output, dpi=90)
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
